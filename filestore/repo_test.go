package filestore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentcore/sessionlog/filestore"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

func TestRepo(t *testing.T) {
	dir := t.TempDir()
	r, err := filestore.NewRepo(dir, filestore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		s, err := r.Create(ctx, sessiontest.TestHeader(id))
		if err != nil {
			t.Fatal(err)
		}
		s.Close(ctx)
	}
	if _, err := r.Create(ctx, sessiontest.TestHeader("a")); !errors.Is(err, session.ErrSessionExists) {
		t.Fatalf("create twice: %v", err)
	}
	if _, err := r.Create(ctx, sessiontest.TestHeader("../x")); !errors.Is(err, session.ErrInvalidSessionID) {
		t.Fatalf("path in id: %v", err)
	}
	s, err := r.Open(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := session.New(s, sessiontest.TestConfig())
	u, _ := sess.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("hi")})
	sess.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("more")})
	sess.SetName(ctx, "first")
	if err := r.Delete(ctx, "a"); !errors.Is(err, filestore.ErrLocked) {
		t.Fatalf("delete while open: %v", err)
	}
	s.Close(ctx)

	page, err := r.List(ctx, session.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range page.Sessions {
		ids = append(ids, in.ID)
	}
	if !slices.Equal(ids, []string{"a", "b"}) || page.Next == "" || page.Sessions[0].Name != "first" || page.Sessions[0].Entries != 3 {
		t.Fatalf("first page = %+v", page)
	}
	page2, _ := r.List(ctx, session.ListOptions{Limit: 2, Cursor: page.Next})
	if len(page2.Sessions) != 1 || page2.Sessions[0].ID != "c" || page2.Next != "" {
		t.Fatalf("second page = %+v", page2)
	}

	dst, sel, err := r.Fork(ctx, "a", session.At(u.ID), sessiontest.TestHeader("f"))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := dst.Header(ctx)
	es, _ := dst.Entries(ctx)
	dst.Close(ctx)
	if h.ParentSession != r.Path("a") || len(es) != 1 || len(sel.Entries) != 1 {
		t.Fatalf("fork: header %+v, %d entries", h, len(es))
	}
	if _, _, err := r.Fork(ctx, "a", session.Before("zzz"), sessiontest.TestHeader("g")); !errors.Is(err, session.ErrInvalidTarget) {
		t.Fatalf("bad fork: %v", err)
	}
	if _, err := os.Stat(r.Path("g")); !os.IsNotExist(err) {
		t.Fatal("a failed fork left its file")
	}
	if err := r.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(ctx, "b"); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("open deleted: %v", err)
	}
	if err := r.Delete(ctx, "b"); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}

// Open takes the path of a session file of its own directory (what a
// fork's ParentSession holds) and refuses any other path.
func TestRepoOpensItsOwnPathsOnly(t *testing.T) {
	dir := t.TempDir()
	r, err := filestore.NewRepo(dir, filestore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Create(ctx, sessiontest.TestHeader("mine"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close(ctx)
	got, err := r.Open(ctx, r.Path("mine"))
	if err != nil {
		t.Fatalf("open by its own path: %v", err)
	}
	got.Close(ctx)
	other := t.TempDir()
	for _, hostile := range []string{
		filepath.Join(other, "mine.jsonl"),
		filepath.Join(dir, "..", filepath.Base(dir)+"x", "mine.jsonl"),
		filepath.Join(dir, "sub", "mine.jsonl"),
		filepath.Join(dir, "bad id!.jsonl"),
		"/etc/passwd.jsonl",
	} {
		if _, err := r.Open(ctx, hostile); !errors.Is(err, session.ErrInvalidSessionID) {
			t.Errorf("Open(%q) = %v, want ErrInvalidSessionID", hostile, err)
		}
	}
}

func TestRepoConformance(t *testing.T) {
	sessiontest.RunRepo(t, sessiontest.RepoBackend{
		Name: "jsonl-dir",
		New: func(t *testing.T) session.Repo {
			r, err := filestore.NewRepo(t.TempDir(), filestore.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			return r
		},
	})
}

// pi's own layout — a folder per working directory of
// <timestamp>_<id>.jsonl files — is read as pi keeps it: listed, opened by
// id or path, deleted; a new session goes where pi would put it.
func TestRepoReadsPisLayout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sample := sessiontest.PiSamples(t)[0]
	h, _ := sessiontest.DecodeFile(t, sample.Data)
	folder := filepath.Join(dir, "--home-me-project--")
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	piFile := filepath.Join(folder, "2025-01-04T02-01-11-992Z_"+h.ID+".jsonl")
	if err := os.WriteFile(piFile, sample.Data, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := filestore.NewRepo(dir, filestore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	page, err := r.List(ctx, session.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != h.ID {
		t.Fatalf("listing of pi's layout: %+v, %v", page.Sessions, err)
	}
	for _, key := range []string{h.ID, piFile} {
		st, err := r.Open(ctx, key)
		if err != nil {
			t.Fatalf("open %s: %v", key, err)
		}
		st.Close(ctx)
	}
	if r.Path(h.ID) != piFile {
		t.Fatalf("path of %s: %s", h.ID, r.Path(h.ID))
	}
	nh := session.Header{ID: "0b1e2f3a-made-here", Timestamp: "2026-12-03T10:11:12.345Z", Cwd: "/home/me/other"}
	st, err := r.Create(ctx, nh)
	if err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	want := filepath.Join(dir, "--home-me-other--", "2026-12-03T10-11-12-345Z_"+nh.ID+".jsonl")
	if _, err := os.Stat(want); err != nil {
		t.Fatalf("a new session in pi's layout is not where pi puts it: %v", err)
	}
	if _, err := r.Create(ctx, nh); !errors.Is(err, session.ErrSessionExists) {
		t.Fatalf("create twice: %v", err)
	}
	if err := r.Delete(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(piFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("delete left %s", piFile)
	}
}
