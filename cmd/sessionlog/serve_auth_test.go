package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// serve with a tenants file and TLS: NATS and HTTP both over TLS, each
// tenant's credentials reaching only its own sessions.
func TestServeWithTenantsAndTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := clustertest.SelfSignedCert(t, dir)
	tenants := filepath.Join(dir, "tenants.json")
	if err := os.WriteFile(tenants, []byte(`{"tenants":[
		{"name":"acme","users":[{"user":"alice","password":"alice-pw"}]},
		{"name":"globex","users":[{"user":"bob","password":"bob-pw"}],"maxStore":104857600}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var out clustertest.SyncBuffer
	var errb clustertest.SyncBuffer
	wg.Add(1)
	go func() {
		defer wg.Done()
		Run(ctx, []string{"serve", "-data", data, "-listen", "127.0.0.1:0", "-http", "127.0.0.1:0",
			"-tenants", tenants, "-tls-cert", cert, "-tls-key", key}, strings.NewReader(""), &out, &errb)
	}()
	defer func() { cancel(); wg.Wait() }()
	sessiontest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		_, err := os.Stat(serveURLFile(data))
		return err
	})
	if !strings.Contains(out.String(), "2 tenant(s)") {
		t.Fatalf("serve said %q (stderr %q)", out.String(), errb.String())
	}
	_, httpURL, _ := strings.Cut(out.String(), "HTTP ")
	httpURL, _, _ = strings.Cut(httpURL, ";")
	if !strings.HasPrefix(httpURL, "https://") {
		t.Fatalf("gateway is not HTTPS: %q", httpURL)
	}
	natsURL, _ := os.ReadFile(serveURLFile(data))
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(cert)
	pool.AppendCertsFromPEM(pem)
	tlsCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}

	// bob writes over NATS (TLS, his credentials) through the service.
	bob, err := nats.Connect(strings.TrimSpace(string(natsURL)), nats.Secure(tlsCfg), nats.UserInfo("bob", "bob-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	bc := slapi.NewClient(bob, "sessionlog.v1")
	if err := bc.Call(ctx, slapi.OpCreate, slapi.CreateRequest{ID: "bobs"}, nil); err != nil {
		t.Fatal(err)
	}
	// alice over HTTPS sees none of it; bob over HTTPS does.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	get := func(path, user, pw string) (int, string) {
		req, _ := http.NewRequest("GET", httpURL+path, nil)
		req.SetBasicAuth(user, pw)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("/v1/sessions/bobs", "alice", "alice-pw"); code != 404 {
		t.Fatalf("alice GET bob's session: %d %s", code, body)
	}
	if code, body := get("/v1/sessions/bobs", "bob", "bob-pw"); code != 200 {
		t.Fatalf("bob GET his session: %d %s", code, body)
	}
	if code, _ := get("/v1/sessions", "bob", "alice-pw"); code != 401 {
		t.Fatalf("bob with alice's password: %d", code)
	}
	// Search: each tenant's index holds its own sessions only. bob finds
	// his word (once his node has indexed it); alice, asking the same,
	// never does, and each node keeps one index per tenant.
	if err := bc.Call(ctx, slapi.OpAppend, map[string]any{"session": "bobs", "entries": []any{map[string]any{
		"type": "message", "message": map[string]any{"role": "user", "content": "xylophone secrets"}}}}, nil); err != nil {
		t.Fatal(err)
	}
	sessiontest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if code, body := get("/v1/search?q=xylophone", "bob", "bob-pw"); code != 200 || !strings.Contains(body, `"session":"bobs"`) {
			return fmt.Errorf("bob's search: %d %s", code, body)
		}
		return nil
	})
	if code, body := get("/v1/search?q=xylophone", "alice", "alice-pw"); code != 200 || !strings.Contains(body, `"total":0`) {
		t.Fatalf("alice's search: %d %s", code, body)
	}
	// Usage too: bob's reply counts for bob, and alice's report has none.
	if err := bc.Call(ctx, slapi.OpAppend, map[string]any{"session": "bobs", "entries": []any{map[string]any{
		"type": "message", "message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "ok"}},
			"provider": "p", "model": "m", "api": "x", "stopReason": "stop", "timestamp": 1,
			"usage": map[string]any{"input": 7, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12, "cost": map[string]any{"total": 0.5}}}}}}, nil); err != nil {
		t.Fatal(err)
	}
	sessiontest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if code, body := get("/v1/usage?by=model", "bob", "bob-pw"); code != 200 || !strings.Contains(body, `"model":"p/m"`) || !strings.Contains(body, `"sessions":1`) {
			return fmt.Errorf("bob's usage: %d %s", code, body)
		}
		return nil
	})
	if code, body := get("/v1/usage?by=model", "alice", "alice-pw"); code != 200 || !strings.Contains(body, `"sessions":0`) || !strings.Contains(body, `"rows":[]`) {
		t.Fatalf("alice's usage: %d %s", code, body)
	}
	for _, tenant := range []string{"acme", "globex"} {
		if _, err := os.Stat(searchDir(data, tenant)); err != nil {
			t.Fatalf("index of %s: %v", tenant, err)
		}
	}
	// Plain TCP to the NATS port is refused.
	if nc, err := nats.Connect(strings.TrimSpace(string(natsURL)), nats.UserInfo("bob", "bob-pw")); err == nil {
		nc.Close()
		t.Fatal("connected without TLS")
	}
}

func TestServeRefusesBadTenantsFiles(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, body, want string }{
		{"unknown field", `{"tenants":[{"name":"a","users":[{"user":"u","password":"p"}],"colour":1}]}`, "colour"},
		{"no users", `{"tenants":[{"name":"a"}]}`, "no users"},
		{"not JSON", `tenants: a`, "tenants file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(dir, c.name+".json")
			os.WriteFile(f, []byte(c.body), 0o600)
			code, _, stderr := runIn(t, filepath.Join(dir, "data-"+c.name), "", "serve", "-listen", "127.0.0.1:0", "-http", "", "-tenants", f)
			if code != 1 || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", code, stderr, c.want)
			}
		})
	}
}
