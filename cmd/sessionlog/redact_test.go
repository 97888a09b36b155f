package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	slapi "github.com/agentcore/sessionlog/api"
)

// serve with a tenants file where one tenant redacts on write: a secret
// appended through the service is in none of that tenant's streams (read
// raw with its own credentials) and the context says what was there; the
// other tenant, which does not redact, keeps it as written.
func TestServeRedactsPerTenant(t *testing.T) {
	dir := t.TempDir()
	tenants := filepath.Join(dir, "tenants.json")
	if err := os.WriteFile(tenants, []byte(`{"tenants":[
		{"name":"acme","users":[{"user":"alice","password":"alice-pw"}],"redact":{"defaults":true,"rules":[{"name":"internal-token","pattern":"itk_[a-z0-9]{12}"}]}},
		{"name":"globex","users":[{"user":"bob","password":"bob-pw"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	serveFor(t, data, "-http", "", "-tenants", tenants)
	ctx := context.Background()
	url, _ := os.ReadFile(serveURLFile(data))
	aws := strings.Join([]string{"AKIA", "ZXCVBNMQWE", "RTYUIO"}, "")
	own := "itk_" + "abcdef123456"
	line := `{"type":"message","message":{"role":"user","content":"keys: ` + aws + ` and ` + own + `","timestamp":1}}`
	for _, tc := range []struct {
		user, pw string
		redacts  bool
	}{{"alice", "alice-pw", true}, {"bob", "bob-pw", false}} {
		nc, err := nats.Connect(strings.TrimSpace(string(url)), nats.UserInfo(tc.user, tc.pw))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		c := slapi.NewClient(nc, "sessionlog.v1")
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		defer ccancel()
		if err := c.Call(cctx, slapi.OpCreate, slapi.CreateRequest{ID: "s"}, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Call(cctx, slapi.OpAppend, slapi.AppendRequest{Session: "s", Entries: []jsontext.Value{jsontext.Value(line)}}, nil); err != nil {
			t.Fatal(err)
		}
		var cr slapi.ContextReply
		if err := c.Call(cctx, slapi.OpContext, slapi.ContextRequest{Session: "s"}, &cr); err != nil {
			t.Fatal(err)
		}
		var sr slapi.StatsReply
		if err := c.Call(cctx, slapi.OpStats, slapi.SessionRequest{Session: "s"}, &sr); err != nil || (sr.Redactions == 2) != tc.redacts {
			t.Fatalf("%s: stats count %d redactions (%v)", tc.user, sr.Redactions, err)
		}
		redacted := bytes.Contains(cr.Messages, []byte("[REDACTED:aws-access-key]")) && bytes.Contains(cr.Messages, []byte("[REDACTED:internal-token]"))
		if redacted != tc.redacts {
			t.Fatalf("%s: context %s", tc.user, cr.Messages)
		}
		js, _ := jetstream.New(nc)
		s, err := js.Stream(cctx, "SESSIONS")
		if err != nil {
			t.Fatal(err)
		}
		info, _ := s.Info(cctx)
		raw := false
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
			if m, err := s.GetMsg(cctx, seq); err == nil && (bytes.Contains(m.Data, []byte(aws)) || bytes.Contains(m.Data, []byte(own))) {
				raw = true
			}
		}
		if raw == tc.redacts {
			t.Fatalf("%s: a secret stored raw: %v, redacting: %v", tc.user, raw, tc.redacts)
		}
	}
}

// The files the lifecycle and redaction flags read are refused, named,
// when they hold something unusable — before anything is stored.
func TestBadPolicyAndRuleFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	data := filepath.Join(dir, "data")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"new", "-id", "x", "-redact-rules", write("rules1.json", `[{"name":"bad name","pattern":"x"}]`)}, "name"},
		{[]string{"new", "-id", "x", "-redact-rules", write("rules2.json", `[{"name":"r","pattern":"("}]`)}, "missing closing"},
		{[]string{"new", "-id", "x", "-redact-rules", write("rules3.json", `{"not":"a list"}`)}, "JSON array"},
		{[]string{"retention", "-policy", write("p1.json", `{"maxIdle":"-5h"}`)}, "negative"},
		{[]string{"retention", "-policy", write("p2.json", `{"maxAge":"10s"}`)}, "under a minute"},
		{[]string{"retention", "-policy", write("p3.json", `{"maxIdle":720}`)}, "a duration is a string"},
		{[]string{"serve", "-listen", "127.0.0.1:0", "-http", "", "-tenants", write("t1.json", `{"tenants":[{"name":"a","users":[{"user":"u","password":"p"}],"redact":{"rules":[{"name":"r","pattern":"a*"}]}}]}`)}, "empty string"},
		{[]string{"serve", "-listen", "127.0.0.1:0", "-http", "", "-tenants", write("t2.json", `{"tenants":[{"name":"a","users":[{"user":"u","password":"p"}],"retention":{"maxSessions":-1}}]}`)}, "negative"},
	} {
		code, _, stderr := runIn(t, data, "", tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want it to say %q", tc.args, code, stderr, tc.want)
		}
	}
	code, out, stderr := runIn(t, data, "", "ls")
	if code != 0 && !strings.Contains(stderr, "holds no store") {
		t.Fatalf("ls: exit %d: %s", code, stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "x" {
			t.Fatalf("a refused command stored a session:\n%s", out)
		}
	}
}
