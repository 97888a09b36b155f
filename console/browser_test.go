package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/gateway"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/stream"
)

var (
	node *cluster.Node
	nc   *nats.Conn
)

func TestMain(m *testing.M) {
	os.Exit(clustertest.RunWithNode("sessionlog-console-test-", nil, func(n *cluster.Node, c *nats.Conn) int {
		node, nc = n, c
		return m.Run()
	}))
}

// stack is a service with a search index and a gateway in front of it.
type stack struct {
	url    string
	b      *stream.Backend
	client *api.Client
	ix     *search.Indexer
}

func startStack(t testing.TB) *stack {
	t.Helper()
	b := servicetest.Partitioned(t, nc, 1)
	x, _, err := search.Open(search.DefaultConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := search.Follow(context.Background(), x, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close(context.Background()); x.Close() })
	_, svcCfg := servicetest.Start(t, nc, b, func(c *service.Config) { c.Search = x })
	cfg := gateway.DefaultConfig("127.0.0.1:0", node.ClientURL())
	cfg.Subject, cfg.Stream = svcCfg.Subject, b.Config()
	g, err := gateway.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	return &stack{url: g.URL(), b: b, client: api.NewClient(nc, svcCfg.Subject), ix: ix}
}

func (s *stack) append(t testing.TB, id string, entries ...map[string]any) api.AppendReply {
	t.Helper()
	var r api.AppendReply
	var list []any
	for _, e := range entries {
		list = append(list, e)
	}
	if err := s.client.Call(context.Background(), api.OpAppend, map[string]any{"session": id, "entries": list}, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func user(text string) map[string]any {
	return map[string]any{"type": "message", "message": map[string]any{"role": "user", "content": text}}
}

// A 1x1 PNG.
const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// chrome finds a Chromium to drive, or skips saying how to get one.
func chrome(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium installed: the console's browser test needs one (apt-get install chromium; .ci/run installs it)")
	return ""
}

// artifacts is where screenshots are kept: $SESSIONLOG_ARTIFACTS, or a
// directory under the system's temp dir, logged.
func artifacts(t *testing.T) string {
	dir := os.Getenv("SESSIONLOG_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "sessionlog-artifacts")
	}
	dir = filepath.Join(dir, "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

func browser(t *testing.T) context.Context { return browserB(t) }

// browserB starts a headless Chromium for t (a test or a benchmark).
func browserB(t testing.TB) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	// The first run starts the browser, and lives as long as it: no
	// timeout on it. The steps after it have one.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	tctx, cancel3 := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel3)
	return tctx
}

func shot(t *testing.T, dir, name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		buf, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.Void{}, os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644)
	}
}

// clickOn clicks the element css selects once there is one, in the page
// itself: the tree's rows are drawn again whenever the texts they wait
// for arrive, so a node found first and clicked after (chromedp.Click) may
// be gone by then.
func clickOn(css string) chromedp.Action[chromedp.Void] {
	sel, _ := json.Marshal(css)
	return poll(fmt.Sprintf(`(() => { const el = document.querySelector(%s); if (!el) return false; el.click(); return true; })()`, sel))
}

// poll waits until the JavaScript expression is true.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second))
}

func text(ctx context.Context, t *testing.T, css string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("text of %s: %v", css, err)
	}
	return s
}

// page is what the page shows, for a failure's message.
func page(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 2000)`))
	if err != nil {
		return "(the page cannot be read: " + err.Error() + ")"
	}
	return s
}

// The console, in a real browser: find a session by search, open its
// tree, click an entry and see it (its image too) and the context, watch
// an entry appended by another client appear, and label it.
func TestConsoleInBrowser(t *testing.T) {
	s := startStack(t)
	ctx := browser(t)
	dir := artifacts(t)
	for _, id := range []string{"alpha", "beta"} {
		if err := s.client.Call(context.Background(), api.OpCreate, api.CreateRequest{ID: id, Cwd: "/work/" + id}, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.append(t, "alpha", user("plan the heliotrope garden"),
		map[string]any{"type": "message", "message": map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "Here is the plan, drawn:"},
			map[string]any{"type": "image", "data": pixel, "mimeType": "image/png"}},
			"provider": "anthropic", "model": "claude", "stopReason": "stop", "usage": map[string]any{"input": 10, "output": 20, "cost": map[string]any{"total": 0.01}}}})
	s.append(t, "beta", user("nothing about flowers"))
	if err := s.ix.CaughtUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	var tree api.TreeReply
	if err := s.client.Call(context.Background(), api.OpTree, api.TreeRequest{Session: "alpha"}, &tree); err != nil {
		t.Fatal(err)
	}
	imageEntry := tree.Nodes[1].ID

	err := chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#sessions .session-link`)),
		poll(`document.querySelectorAll('#sessions .session-link').length === 2`),
		shot(t, dir, "1-list"),
	)
	if err != nil {
		t.Fatalf("list: %v\n%s", err, page(ctx))
	}
	// The list says what each session is about (its first message, as
	// pi's picker does), the model, tokens and cost, and how long ago.
	if got := text(ctx, t, "#sessions"); !strings.Contains(got, "plan the heliotrope garden") || !strings.Contains(got, "nothing about flowers") ||
		!strings.Contains(got, "claude") || !strings.Contains(got, "$0.0100") || !strings.Contains(got, "30") || !strings.Contains(got, "ago") && !strings.Contains(got, "just now") {
		t.Fatalf("the session list: %q", got)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#search-q`), "heliotrope"),
		chromedp.Click(chromedp.CSS(`#search-form button`)),
		chromedp.WaitVisible(chromedp.CSS(`#hits .hit`)),
		shot(t, dir, "2-search"),
	)
	if err != nil {
		t.Fatalf("search: %v\n%s", err, page(ctx))
	}
	if got := text(ctx, t, "#hits"); !strings.Contains(got, "alpha") || strings.Contains(got, "beta") || !strings.Contains(got, "heliotrope") {
		t.Fatalf("search hits: %q", got)
	}
	err = chromedp.Do(ctx,
		clickOn(`#hits .hit`),
		chromedp.WaitVisible(chromedp.CSS(`#tree .row`)),
		chromedp.WaitVisible(chromedp.CSS(`#context .msg`)),
	)
	if err != nil {
		t.Fatalf("open the session from a hit: %v", err)
	}
	if got := text(ctx, t, "#context"); !strings.Contains(got, "heliotrope") {
		t.Fatalf("context: %q", got)
	}
	// A row's type and its text stand apart, whatever the type's length.
	gaps, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[...document.querySelectorAll('#tree .row')].map(row => {
		const kind = row.querySelector('.kind'), text = [...row.childNodes].find(n => n.nodeType === 3 && n.textContent.trim());
		if (!text) return 99;
		const r = document.createRange(); r.selectNodeContents(text);
		return r.getBoundingClientRect().left - kind.getBoundingClientRect().right;
	})`))
	if err != nil || len(gaps) == 0 {
		t.Fatalf("measuring rows: %v %v", err, gaps)
	}
	for _, g := range gaps {
		if g < 6 {
			t.Fatalf("a row's type runs into its text: %v px apart (%v)", g, gaps)
		}
	}
	// The keys of pi's /tree, from the entry the hit selected (the
	// first): ↓ moves on, ↓ at the end stays, ← goes to the parent, ↑ at
	// the top stays, Enter shows the context, / goes to the search.
	selected := `(document.querySelector('#tree .row.selected') || {}).dataset?.id || ''`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`current.close(); document.getElementById('tree').focus(); true`)); err != nil {
		t.Fatalf("focus the tree: %v", err)
	}
	keys := func(k string) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.KeyEvent(k)); err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](selected))
		if err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
		return got
	}
	got := []string{keys(kb.ArrowDown), keys(kb.ArrowDown), keys(kb.ArrowLeft), keys(kb.ArrowUp)}
	if want := []string{tree.Nodes[1].ID, tree.Nodes[1].ID, tree.Nodes[0].ID, tree.Nodes[0].ID}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("↓ ↓ ← ↑ selected %v, want %v", got, want)
	}
	err = chromedp.Do(ctx,
		chromedp.KeyEvent(kb.Enter),
		poll(`document.getElementById('tab-context').classList.contains('active') && document.querySelectorAll('#context .msg').length === 1`),
		chromedp.KeyEvent("/"),
		poll(`document.activeElement === document.getElementById('search-q')`),
		shot(t, dir, "2b-keys"),
	)
	if err != nil {
		t.Fatalf("Enter and /: %v\n%s", err, page(ctx))
	}
	// It follows the system's colour scheme.
	scheme := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
			return err
		})
	}
	if err := chromedp.Do(ctx, scheme("dark"), shot(t, dir, "2c-dark")); err != nil {
		t.Fatalf("dark scheme: %v", err)
	}
	bg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	if err != nil || bg != "rgb(20, 24, 28)" {
		t.Fatalf("dark scheme: %v, background %q", err, bg)
	}
	err = chromedp.Do(ctx,
		scheme("light"),
		chromedp.Navigate(s.url+"/#/s/alpha"),
		chromedp.WaitVisible(chromedp.CSS(`#tree .row`)),
	)
	if err != nil {
		t.Fatalf("back to the session: %v", err)
	}
	err = chromedp.Do(ctx,
		clickOn(fmt.Sprintf(`#tree .row[data-id=%q]`, imageEntry)),
		chromedp.Click(chromedp.CSS(`#tab-entry`)),
		chromedp.WaitVisible(chromedp.CSS(`#entry-json`)),
		poll(`document.querySelectorAll('#panel img.content').length === 1 && document.querySelector('#panel img.content').naturalWidth === 1`),
		shot(t, dir, "3-entry"),
	)
	if err != nil {
		t.Fatalf("entry detail with its image: %v", err)
	}

	// Another client appends: the tree shows it, live.
	r := s.append(t, "alpha", user("the zeppelin arrives"))
	err = chromedp.Do(ctx,
		poll(`[...document.querySelectorAll('#tree .row')].some(r => r.textContent.includes('zeppelin'))`),
		poll(`document.getElementById('entry-count').textContent === '3'`),
		clickOn(fmt.Sprintf(`#tree .row[data-id=%q]`, r.Leaf)),
		poll(`(window.prompt = () => "landmark") && true`),
		chromedp.Click(chromedp.CSS(`#act-label`)),
		poll(`document.getElementById('banner').textContent.startsWith('Labelled')`),
		poll(`[...document.querySelectorAll('#tree .row .tag')].some(t => t.textContent === 'landmark')`),
		shot(t, dir, "4-labelled"),
	)
	if err != nil {
		t.Fatalf("live entry and label: %v", err)
	}
	if err := s.client.Call(context.Background(), api.OpTree, api.TreeRequest{Session: "alpha"}, &tree); err != nil {
		t.Fatal(err)
	}
	labelled := false
	for _, n := range tree.Nodes {
		labelled = labelled || (n.ID == r.Leaf && n.Label == "landmark")
	}
	if !labelled {
		t.Fatalf("the label set in the console is not in the session: %+v", tree.Nodes)
	}
	// A write that lost a race is said plainly, and nothing is written:
	// with the live view stopped, another client appends, then a label
	// set here is refused (the session moved on) and the view reloads.
	step := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, a); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, page(ctx))
		}
	}
	step("stop the live view", poll(`(current.close(), true)`))
	other := s.append(t, "alpha", user("written elsewhere meanwhile"))
	step("select", clickOn(fmt.Sprintf(`#tree .row[data-id=%q]`, r.Leaf)))
	step("answer the prompt", poll(`(window.prompt = () => "too late") && true`))
	step("label", chromedp.Click(chromedp.CSS(`#act-label`)))
	step("the conflict said", poll(`document.getElementById('banner').textContent.startsWith('Conflict')`))
	step("the view reloaded", poll(`!!document.querySelector('#tree .row[data-id="`+other.Leaf+`"]')`))
	step("screenshot", shot(t, dir, "5-conflict"))
	if err := s.client.Call(context.Background(), api.OpTree, api.TreeRequest{Session: "alpha"}, &tree); err != nil {
		t.Fatal(err)
	}
	for _, n := range tree.Nodes {
		if n.Label == "too late" {
			t.Fatal("a refused label was written")
		}
	}
	// Stats of the session, from the same page.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#tab-stats`)),
		chromedp.WaitVisible(chromedp.CSS(`#stats-by-model`)),
	)
	if got := text(ctx, t, "#stats-by-model"); err != nil || !strings.Contains(got, "anthropic/claude") {
		t.Fatalf("stats: %v %q", err, got)
	}
}

// The console's files are served with a policy that keeps the page to
// its own scripts, and / leads to it.
func TestConsoleFiles(t *testing.T) {
	s := startStack(t)
	res, err := http.Get(s.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Request.URL.Path != "/console/" || res.StatusCode != 200 {
		t.Fatalf("GET / ended at %s: %d", res.Request.URL, res.StatusCode)
	}
	csp := res.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("policy %q", csp)
	}
	for path, want := range map[string]int{"/console/app.js": 200, "/console/app.css": 200, "/console/nope.js": 404, "/console/../go.mod": 404} {
		res, err := http.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, res.StatusCode, want)
		}
	}
}

// chromedpOpen navigates to url and waits until the expression is true.
func chromedpOpen(ctx context.Context, url, until string) error {
	return chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")), poll(until))
}
