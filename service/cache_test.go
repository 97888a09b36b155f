package service_test

import (
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/service"
)

// The sessions kept open between requests are bounded by their bytes
// (session.Tree.Bytes), not only by their number: reading many large
// sessions, or writing one past the bound, leaves the cache within it,
// and every read still answers whole. Before, the cache held all of them.
func TestCacheIsBoundedByBytes(t *testing.T) {
	f := start(t, func(c *service.Config) { c.MaxCachedBytes = 1 << 20 })
	text := strings.Repeat("z", 100<<10)
	msg := `{"type":"message","message":{"role":"user","content":"` + text + `"}}`
	four := `{"session":"%s","entries":[` + strings.Repeat(msg+",", 3) + msg + `]}`
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		f.call(t, api.OpCreate, api.CreateRequest{ID: id}, nil)
		if err := f.raw(api.OpAppend, strings.Replace(four, "%s", id, 1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		var reply api.ContextReply
		f.call(t, api.OpContext, api.ContextRequest{Session: id}, &reply)
		if reply.Total != 4 {
			t.Fatalf("context of %s: %d messages", id, reply.Total)
		}
		if n, bytes := service.Cached(f.svc); bytes > 1<<20 {
			t.Fatalf("after reading %s the cache holds %d sessions of %d bytes, past 1 MiB", id, n, bytes)
		}
	}
	// One session written past the whole bound is not kept: the next
	// request opens it again.
	f.call(t, api.OpCreate, api.CreateRequest{ID: "hot"}, nil)
	for range 4 {
		if err := f.raw(api.OpAppend, strings.Replace(four, "%s", "hot", 1)); err != nil {
			t.Fatal(err)
		}
		if n, bytes := service.Cached(f.svc); bytes > 1<<20 {
			t.Fatalf("while writing a 1.6 MB session the cache holds %d sessions of %d bytes", n, bytes)
		}
	}
	var reply api.ContextReply
	f.call(t, api.OpContext, api.ContextRequest{Session: "hot"}, &reply)
	if reply.Total != 16 {
		t.Fatalf("the hot session's context: %d messages, want 16", reply.Total)
	}
}
