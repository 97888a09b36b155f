package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// What a new user's walk through the CLI met, each a test: a port in use,
// names that break tables, reads that made stores, assistant messages
// that said not who answered, typos.

// serve on a port another process holds refuses at once, naming the port
// (it waited out the node's 30 s start, then blamed the data dir).
func TestServeRefusesAPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	// Far less than the node's start timeout: a wait would end on this
	// deadline with another error.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errb strings.Builder
	code := Run(ctx, []string{"serve", "-listen", addr, "-data", t.TempDir()}, strings.NewReader(""), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), addr) || !strings.Contains(errb.String(), "port in use") {
		t.Fatalf("serve on a port in use: exit %d, %q; want exit 1 naming %s as in use", code, errb.String(), addr)
	}
	if ctx.Err() != nil {
		t.Fatalf("serve waited for the deadline: %q", errb.String())
	}
}

// ls keeps one row a session whatever its name holds, and shows times to
// the second.
func TestListRowsStayRows(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "n1")
	mustRun(t, data, "", "append", "n1", "-text", "hi")
	// pi 0.73 and other writers keep a name's line breaks (name folds
	// them, as pi 1.6 does).
	mustRun(t, data, `{"type":"session_info","name":"two\nlines\tand a tab"}`, "append", "n1", "-entry")
	mustRun(t, data, "", "new", "-id", "n2")
	mustRun(t, data, "", "append", "n2", "-text", "hi")
	mustRun(t, data, "", "name", "n2", "folded\r\n\nname ")
	out := mustRun(t, data, "", "ls")
	lines := strings.Split(out, "\n")
	if len(lines) != 3 || !strings.Contains(out, `two\nlines\tand a tab`) || !regexp.MustCompile(`  folded name\s`).MatchString(out) {
		t.Fatalf("ls:\n%s", out)
	}
	if !regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s`).MatchString(lines[1]) || regexp.MustCompile(`:\d\d\.\d`).MatchString(out) {
		t.Fatalf("ls shows times other than to the second:\n%s", out)
	}
}

// A verb that reads sessions leaves no store behind where there was none;
// ls there lists nothing.
func TestReadsMakeNoStore(t *testing.T) {
	for _, args := range [][]string{{"tree", "nosuch"}, {"context", "nosuch"}, {"stats", "nosuch"}, {"export", "nosuch"}, {"rm", "nosuch"}} {
		data := filepath.Join(t.TempDir(), "fresh")
		code, _, stderr := runIn(t, data, "", args...)
		if code != 1 || !strings.Contains(stderr, "no sessions here yet") {
			t.Errorf("%s on a fresh data dir: exit %d, %q", args, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(data, "jetstream")); !os.IsNotExist(err) {
			t.Errorf("%s made a store in %s (%v)", args, data, err)
		}
	}
	files := filepath.Join(t.TempDir(), "none")
	if code, _, stderr := runIn(t, "", "", "tree", "nosuch", "-files", files); code != 1 || !strings.Contains(stderr, "no sessions here yet") {
		t.Errorf("tree -files on a missing directory: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(files); !os.IsNotExist(err) {
		t.Errorf("tree -files made %s", files)
	}
	// ls says so too, as every verb does: a mistyped -data is not an
	// empty listing.
	data := filepath.Join(t.TempDir(), "fresh")
	if code, out, stderr := runIn(t, data, "", "ls"); code != 1 || out != "" || !strings.Contains(stderr, "no sessions here yet") {
		t.Errorf("ls on a fresh data dir: exit %d, %q, %q", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(data, "jetstream")); !os.IsNotExist(err) {
		t.Errorf("ls made a store in %s (%v)", data, err)
	}
}

// An assistant message says who answered: the flags' one is refused
// without -provider and -model, as a written one is without them.
func TestAssistantSaysWhoAnswered(t *testing.T) {
	data := t.TempDir()
	mustRun(t, data, "", "new", "-id", "w1")
	if code, _, stderr := runIn(t, data, "", "append", "w1", "-role", "assistant", "-text", "hi"); code != 2 || !strings.Contains(stderr, "-provider and -model") {
		t.Fatalf("append -role assistant without a model: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runIn(t, data, `{"role":"assistant","content":[{"type":"text","text":"hi"}],"timestamp":1}`, "append", "w1", "-json"); code != 1 || !strings.Contains(stderr, "/message/provider") {
		t.Fatalf("append -json of an assistant message without a model: exit %d, %q", code, stderr)
	}
	mustRun(t, data, "", "append", "w1", "-role", "assistant", "-text", "hi", "-provider", "anthropic", "-model", "claude-x")
	if c := mustRun(t, data, "", "context", "w1"); !strings.Contains(c, `"provider": "anthropic"`) && !strings.Contains(c, `"provider":"anthropic"`) {
		t.Fatalf("context:\n%s", c)
	}
}

// A mistyped verb or flag is answered with the nearest one.
func TestDidYouMean(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"tre", "x"}, `did you mean "tree"`},
		{[]string{"contxt", "x"}, `did you mean "context"`},
		{[]string{"ls", "-nmae", "x"}, "did you mean -name?"},
		{[]string{"append", "x", "-txet", "hi"}, "did you mean -text?"},
	} {
		code, _, stderr := runIn(t, "", "", tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, %q; want %q", tt.args, code, stderr, tt.want)
		}
	}
	if code, _, stderr := runIn(t, "", "", "qqqqqq"); code != 2 || strings.Contains(stderr, "did you mean") {
		t.Errorf("a word near no verb: exit %d, %q", code, stderr)
	}
}
