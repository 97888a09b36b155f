package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster/clustertest"
)

// docPages are the README and the pages of docs/.
func docPages(t *testing.T) map[string]string {
	t.Helper()
	pages := map[string]string{}
	files, _ := filepath.Glob("../../docs/*.md")
	for _, f := range append(files, "../../README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[f] = string(b)
	}
	if len(pages) < 7 {
		t.Fatalf("%d pages", len(pages))
	}
	return pages
}

// Nothing in the docs rots: every `sessionlog` line of a shell block names
// a verb the binary has, with flags that verb takes; every JSON block
// parses; every Go block is Go; every link to a file of the repository
// finds it. (The command line's block and the README's tour also run:
// TestREADMECommands.)
func TestDocsAreTrue(t *testing.T) {
	usage := map[string]string{} // verb → its flags, as -h prints them
	flagsOf := func(verb string) (string, bool) {
		if u, ok := usage[verb]; ok {
			return u, true
		}
		if _, ok := verbs[verb]; !ok {
			return "", false
		}
		var out, errb bytes.Buffer
		Run(context.Background(), []string{verb, "-h"}, strings.NewReader(""), &out, &errb)
		usage[verb] = out.String() + errb.String()
		return usage[verb], true
	}
	flag := regexp.MustCompile(`^-{1,2}([a-z][a-z0-9-]*)`)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	lines, jsons, gos, links := 0, 0, 0, 0
	for page, s := range docPages(t) {
		for _, lang := range []string{"sh", "bash"} {
			for _, block := range fencedBlocks(s, lang) {
				for _, line := range strings.Split(block, "\n") {
					if k := strings.Index(line, "  #"); k >= 0 {
						line = line[:k]
					}
					w := words(strings.TrimSpace(line))
					for len(w) > 0 && strings.Contains(w[0], "=") { // ENV=value sessionlog …
						w = w[1:]
					}
					if len(w) < 2 || (w[0] != "sessionlog" && w[0] != "./sessionlog") {
						continue
					}
					lines++
					verb := w[1]
					if verb == "--version" || verb == "help" {
						continue
					}
					u, ok := flagsOf(verb)
					if !ok {
						t.Errorf("%s: %q: no verb %q", page, line, verb)
						continue
					}
					for _, a := range w[2:] {
						if m := flag.FindStringSubmatch(a); m != nil && !strings.Contains(u, "-"+m[1]+" ") && !strings.Contains(u, "-"+m[1]+"\n") {
							t.Errorf("%s: %q: %s takes no flag -%s", page, line, verb, m[1])
						}
					}
				}
			}
		}
		// An agent host's configuration that starts sessionlog (JSON, TOML)
		// gives it a verb and flags it has.
		checkArgs := func(what string, args []string) {
			if len(args) == 0 {
				t.Errorf("%s: %s starts sessionlog without a verb", page, what)
				return
			}
			u, ok := flagsOf(args[0])
			if !ok {
				t.Errorf("%s: %s: no verb %q", page, what, args[0])
				return
			}
			for _, a := range args[1:] {
				if m := flag.FindStringSubmatch(a); m != nil && !strings.Contains(u, "-"+m[1]+" ") && !strings.Contains(u, "-"+m[1]+"\n") {
					t.Errorf("%s: %s: %s takes no flag -%s", page, what, args[0], m[1])
				}
			}
			lines++
		}
		for _, block := range fencedBlocks(s, "json") {
			jsons++
			var v struct {
				MCPServers map[string]struct {
					Command string
					Args    []string
				} `json:"mcpServers"`
			}
			if err := json.Unmarshal([]byte(block), &v); err != nil {
				t.Errorf("%s: a JSON block that does not parse (%v):\n%s", page, err, block)
			}
			for name, srv := range v.MCPServers {
				if srv.Command == "sessionlog" {
					checkArgs("mcpServers."+name, srv.Args)
				}
			}
		}
		for _, block := range fencedBlocks(s, "toml") {
			if !strings.Contains(block, `command = "sessionlog"`) {
				continue
			}
			var args []string
			m := regexp.MustCompile(`(?m)^args = (\[.*\])$`).FindStringSubmatch(block)
			if m == nil || json.Unmarshal([]byte(m[1]), &args) != nil {
				t.Errorf("%s: a TOML block starting sessionlog without args sessionlog can read:\n%s", page, block)
				continue
			}
			checkArgs("TOML", args)
		}
		for _, block := range fencedBlocks(s, "go") {
			gos++
			// "…" on a line of its own, or as a block's body, marks what a
			// sketch leaves out.
			block = regexp.MustCompile(`(?m)^\s*…\s*$`).ReplaceAllString(block, "")
			block = strings.ReplaceAll(block, "{ … }", "{}")
			src := block
			if !strings.HasPrefix(strings.TrimSpace(src), "package ") {
				src = "package doc\n" + src
			}
			if _, err := parser.ParseFile(token.NewFileSet(), page, src, 0); err != nil {
				if _, err2 := parser.ParseFile(token.NewFileSet(), page, "package doc\nfunc _() {\n"+block+"\n}\n", 0); err2 != nil {
					t.Errorf("%s: a Go block that is not Go (%v):\n%s", page, err, block)
				}
			}
		}
		for _, m := range link.FindAllStringSubmatch(s, -1) {
			target := m[1]
			if strings.HasPrefix(target, "http") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			links++
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), target)); err != nil {
				t.Errorf("%s: a link to %s, which is not there", page, m[1])
			}
		}
	}
	t.Logf("%d sessionlog lines, %d JSON blocks, %d Go blocks, %d links checked", lines, jsons, gos, links)
	if lines < 40 || links < 10 {
		t.Fatalf("only %d sessionlog lines and %d links found", lines, links)
	}
}

// The docs' requests to a running node — `nats req sessionlog.v1.…` and
// `curl` lines — are sent, in order, to a node started here: each is one
// the protocol takes (its answer may be an error about the state of the
// sessions a line names, never a malformed request or an unknown route).
func TestDocsRequestsAreWellFormed(t *testing.T) {
	data := t.TempDir()
	httpAddr := fmt.Sprintf("127.0.0.1:%d", clustertest.FreePort(t))
	serveFor(t, data, "-http", httpAddr)
	nc := connectServe(t, data)
	ctx := t.Context()
	host := regexp.MustCompile(`^(https?://)?(localhost|127\.0\.0\.1):8080`)
	sent := 0
	pages := docPages(t)
	for _, page := range []string{"../../docs/protocol.md", "../../docs/operations.md", "../../README.md"} {
		for _, block := range fencedBlocks(pages[page], "sh") {
			for _, line := range strings.Split(block, "\n") {
				if k := strings.Index(line, "  #"); k >= 0 {
					line = line[:k]
				}
				w := words(strings.TrimSpace(line))
				switch {
				case len(w) == 4 && w[0] == "nats" && w[1] == "req" && strings.HasPrefix(w[2], "sessionlog.v1."):
					msg, err := nc.Request(w[2], []byte(w[3]), 10*time.Second)
					if err != nil {
						t.Errorf("%s: %s: %v", page, line, err)
						continue
					}
					var reply struct{ Error *slapi.Error }
					if json.Unmarshal(msg.Data, &reply) != nil {
						t.Errorf("%s: %s: the answer is not JSON: %s", page, line, msg.Data)
					} else if e := reply.Error; e != nil && (e.Code == slapi.CodeBadRequest || e.Code == slapi.CodeInternal) {
						t.Errorf("%s: %s: %s %s: %s", page, line, e.Code, e.Field, e.Message)
					}
					sent++
				case len(w) >= 3 && w[0] == "curl" && !strings.Contains(line, "https://"):
					method, url, body, stream := "GET", "", "", false
					for k := 1; k < len(w); k++ {
						switch a := w[k]; {
						case a == "-d":
							method, body, k = "POST", w[k+1], k+1
						case a == "-X":
							method, k = w[k+1], k+1
						case a == "-sN" || a == "-N":
							stream = true
						case !strings.HasPrefix(a, "-"):
							url = host.ReplaceAllString(a, "http://"+httpAddr)
						}
					}
					rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
					req, _ := http.NewRequestWithContext(rctx, method, url, strings.NewReader(body))
					if body != "" {
						req.Header.Set("Content-Type", "application/json")
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						rcancel()
						t.Errorf("%s: %s: %v", page, line, err)
						continue
					}
					if !stream {
						b, _ := io.ReadAll(resp.Body)
						var reply struct{ Error *slapi.Error }
						_ = json.Unmarshal(b, &reply)
						if e := reply.Error; resp.StatusCode >= 300 && (e == nil || e.Code == slapi.CodeBadRequest || e.Code == slapi.CodeInternal || strings.HasPrefix(e.Message, "no route")) {
							t.Errorf("%s: %s: %s %s", page, line, resp.Status, b)
						}
					} else if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
						t.Errorf("%s: %s: %s %s", page, line, resp.Status, resp.Header.Get("Content-Type"))
					}
					resp.Body.Close()
					rcancel()
					sent++
				}
			}
		}
	}
	if sent < 12 {
		t.Fatalf("only %d requests sent", sent)
	}
	t.Logf("%d requests of the docs sent to a node", sent)
}
