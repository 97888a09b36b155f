package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/outline"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

func runSearch(ctx context.Context, e env) error {
	fs := newFlags("search", e)
	rf := addRepoFlags(fs)
	sessionID := fs.String("session", "", "search this session only: its current branch, unless -scope says otherwise")
	scope := fs.String("scope", "", "with -session: branch (the default: the path from the root to -at, or to the leaf), subtree (-at and everything under it) or session (every branch)")
	at := fs.String("at", "", "with -session: the entry the branch ends at, or the subtree starts from")
	var f slapi.SearchRequest
	fs.StringVar(&f.Role, "role", "", "entries of this role only (user, assistant, toolResult, …)")
	fs.StringVar(&f.Tool, "tool", "", "entries that called (or answered) this tool")
	fs.StringVar(&f.Path, "path", "", "entries whose tool calls named this file, or a file under this directory")
	fs.StringVar(&f.Model, "model", "", "assistant entries of this provider/model")
	fs.StringVar(&f.Agent, "agent", "", "sessions of this agent: pi, claude-code, codex, langgraph, openai-agents")
	fs.StringVar(&f.Cwd, "cwd", "", "sessions working in this directory, or under it")
	fs.StringVar(&f.Label, "label", "", "entries labelled so (their latest label)")
	fs.StringVar(&f.Since, "since", "", "entries at or after this time (RFC 3339)")
	fs.StringVar(&f.Until, "until", "", "entries before this time (RFC 3339)")
	limit := fs.Int("limit", search.DefaultLimit, "hits to print")
	offset := fs.Int("offset", 0, "hits to skip (the next page: -offset 20)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	args, err := parseArgs(fs, e.args, -1, `the words to find (a phrase: '"exact words"')`)
	if err != nil {
		return err
	}
	if rf.files != "" {
		return usageError("search reads the index of a JetStream store, not -files (grep serves files)")
	}
	req := f
	req.Query, req.Session, req.Scope, req.At, req.Limit, req.Offset = strings.Join(args, " "), *sessionID, *scope, *at, *limit, *offset
	sc, err := req.Scoped()
	if err != nil {
		return usageError("%v", err)
	}
	filter, err := search.FilterOf(&req)
	if err != nil {
		return usageError("%v", err)
	}
	q := search.Query{Text: req.Query, Session: req.Session, Limit: req.Limit, Offset: req.Offset, Filter: filter}
	repo, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer repo.close(context.WithoutCancel(ctx))
	var res search.Result
	if repo.embedded {
		res, err = searchHere(ctx, repo, q, sc, req.At)
	} else {
		// A serve holds the index: ask its service.
		err = slapi.NewClient(repo.nc, service.DefaultConfig(sysConfig()).Subject).Call(ctx, slapi.OpSearch, req, &res)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	// Grouped by session, the sessions in the order of their best hits;
	// each hit's entry is what tree -at and context -at take.
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	for _, hits := range res.BySession() {
		fmt.Fprintf(tw, "%s\t(%d hit(s))\t%s\t\n", hits[0].Session, len(hits), sessionTitle(ctx, repo, hits[0].Session))
		for _, h := range hits {
			snippet := marked(h)
			if h.OutsideContext {
				snippet = "(summarized: outside the context) " + snippet
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", h.Entry, strings.TrimPrefix(h.Role+" "+h.Type, " message"), snippet)
		}
	}
	tw.Flush()
	about := ""
	if res.TotalEstimated {
		about = "about "
	}
	fmt.Fprintf(e.stderr, "%d of %s%d hit(s)\n", len(res.Hits), about, res.Total)
	return nil
}

// searchHere brings the data dir's index up to date with the stream and
// searches it (no serve runs to keep it current).
func searchHere(ctx context.Context, repo *openedRepo, q search.Query, scope, at string) (search.Result, error) {
	b, ok := repo.Repo.(*stream.Backend)
	if !ok {
		return search.Result{}, errors.New("search needs a JetStream store")
	}
	if scope != slapi.ScopeSession {
		sc, err := scopeHere(ctx, b, q.Session, scope, at)
		if err != nil {
			return search.Result{}, err
		}
		q.Scope = &sc
	}
	var res search.Result
	err := withIndexHere(ctx, repo, b, func(x *search.Index) (err error) {
		res, err = x.Search(ctx, q, b.Exists)
		return err
	})
	return res, err
}

// withIndexHere runs fn on the data dir's index, brought up to date with
// the stream (no serve runs to keep it current).
func withIndexHere(ctx context.Context, repo *openedRepo, b *stream.Backend, fn func(x *search.Index) error) error {
	x, ix, err := openSearch(ctx, repo.node, "", b)
	if err != nil {
		return err
	}
	defer x.Close()
	defer ix.Close(context.WithoutCancel(ctx))
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := ix.CaughtUp(cctx); err != nil {
		return fmt.Errorf("search: bringing the index up to date: %w", err)
	}
	return fn(x)
}

// scopeHere reads a search's scope from the session's tree.
func scopeHere(ctx context.Context, b *stream.Backend, id, scope, at string) (sc search.Scope, err error) {
	st, err := b.OpenStore(ctx, id)
	if err != nil {
		return sc, err
	}
	defer st.Close(context.WithoutCancel(ctx))
	err = st.ReadTreeAt(ctx, func(t *session.Tree, _ uint64) (err error) {
		sc, err = search.ScopeOf(t, scope, at)
		return err
	})
	if err != nil {
		return sc, fmt.Errorf("search: session %s: %w", id, err)
	}
	return sc, nil
}

// marked is a hit's snippet on one line with its matches in [brackets].
func marked(h search.Hit) string {
	var b strings.Builder
	at := 0
	for _, m := range h.Matches {
		if m[0] < at || m[1] > len(h.Snippet) {
			continue
		}
		b.WriteString(h.Snippet[at:m[0]])
		b.WriteString("[" + h.Snippet[m[0]:m[1]] + "]")
		at = m[1]
	}
	b.WriteString(h.Snippet[at:])
	return outline.OneLine(b.String(), math.MaxInt)
}

// sessionTitle is a session as people name it, quoted: its name, else
// the first message its user typed ("" when it has neither, or cannot be
// read now: the id beside it says which it is).
func sessionTitle(ctx context.Context, repo session.Repo, id string) string {
	st, err := repo.Open(ctx, id)
	if err != nil {
		return ""
	}
	defer st.Close(context.WithoutCancel(ctx))
	title, _ := st.SessionName(ctx)
	if title == "" {
		if stats, err := st.Stats(ctx); err == nil {
			title = stats.FirstUser
		}
	}
	if title == "" {
		return ""
	}
	return "“" + outline.OneLine(title, 80) + "”"
}
