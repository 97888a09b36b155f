package clients

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/internal/peers"
)

// The Vercel AI SDK, resumable-stream and the Redis client it takes, as
// the adapter is held to them.
var aiSDKPackages = []string{"ai@7.0.173", "resumable-stream@2.2.13", "redis@6.3.1"}

// aiSDKApp makes the application the AI SDK tests run from.
func aiSDKApp(t *testing.T) string {
	return clientApp(t, ".ai-test", "Vercel AI SDK", aiSDKPackages...)
}

// startRedis starts a real Redis (Debian's redis-server) on loopback for
// the test; without one the test skips, saying so.
func startRedis(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := peers.StartRedis(ctx, t.TempDir())
	if errors.Is(err, peers.ErrNoRedis) {
		skipPeer(t, "%v: the comparison with resumable-stream on Redis is not run", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r.URL
}

// The same scripted scenarios (one reader, a reader joining mid-way, one
// reconnecting after a cut, two readers, an expired stream, a stop) give
// every reader the same chunks in the same order from resumable-stream on
// a real Redis and from sessionlog's generations
// (clients/typescript/test-ai-sdk/resumable.test.js).
func TestAISDKResumableStreams(t *testing.T) {
	node := testNode(t)
	redis := startRedis(t)
	a := newAppTest(t, aiSDKApp(t), node, "test-ai-sdk/resumable.test.js")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := a.cmd(ctx, "--test", "resumable.test.mjs")
	cmd.Env = append(cmd.Env, "REDIS_URL="+redis)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "# pass 6") || !strings.Contains(string(out), "# skipped 0") {
		t.Fatalf("node --test resumable.test.mjs: %v\n%s", err, out)
	}
}

// A real streamText with the AI SDK's scripted model, through route
// handlers on SessionlogChats: a reply stored as it was streamed, resumed
// on another connection after a cut, stopped for every reader (the
// model's request aborted), chats branched by regeneration and edits,
// listed by user newest first (clients/typescript/test-ai-sdk/chat.test.js).
func TestAISDKChats(t *testing.T) {
	node := testNode(t)
	a := newAppTest(t, aiSDKApp(t), node, "test-ai-sdk/chat.test.js")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := a.cmd(ctx, "--test", "chat.test.mjs").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "# pass 7") || !strings.Contains(string(out), "# skipped 0") {
		t.Fatalf("node --test chat.test.mjs: %v\n%s", err, out)
	}
}

// The README's AI SDK example runs as written, and prints what it says.
func TestAISDKReadmeExample(t *testing.T) {
	out := runReadmeExample(t, aiSDKApp(t), "ai-sdk")
	if want := "user,assistant Hello, Ada!\n204 none\n[ 'Hi, I am Ada' ]\n"; out != want {
		t.Fatalf("the README's example printed:\n%s\nwant:\n%s", out, want)
	}
}
