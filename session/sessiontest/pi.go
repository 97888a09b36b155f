package sessiontest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

// PiExpected is what pi's own loader reported for a sample file.
type PiExpected struct {
	Header     map[string]any `json:"header"`
	EntryCount int            `json:"entryCount"`
	Leaf       *string        `json:"leaf"`
	Branch     []string       `json:"branch"`
	Context    struct {
		ThinkingLevel string `json:"thinkingLevel"`
		Model         *struct {
			Provider string `json:"provider"`
			ModelID  string `json:"modelId"`
		} `json:"model"`
		MessageCount int `json:"messageCount"`
		Messages     []struct {
			Role          string `json:"role"`
			Digest        string `json:"digest"`
			ContentDigest string `json:"contentDigest"`
		} `json:"messages"`
	} `json:"context"`
	Labels []struct {
		ID        string `json:"id"`
		Label     string `json:"label"`
		Timestamp string `json:"timestamp"`
	} `json:"labels"`
	Name *string `json:"name"`
	Tree struct {
		Roots []string `json:"roots"`
		Nodes []struct {
			ID       string   `json:"id"`
			Children []string `json:"children"`
		} `json:"nodes"`
	} `json:"tree"`
}

// PiSample is one pi-written file with what pi reported for it.
type PiSample struct {
	Name     string
	Data     []byte
	Expected PiExpected
}

// PiSamples returns the pi sample files shipped with the suite: written
// by pi 0.73.1 (testdata/pi) and by pi 1.6.0's SessionManager through
// every append method it has (testdata/pi16, made by pigen/generate.mjs).
func PiSamples(t testing.TB) []PiSample {
	t.Helper()
	var out []PiSample
	for _, dir := range []string{"testdata/pi", "testdata/pi16"} {
		sub, err := fs.Sub(testdata, dir)
		if err != nil {
			t.Fatal(err)
		}
		samples := ReadPiSamples(t, sub)
		if len(samples) == 0 {
			t.Fatalf("no pi samples under %s", dir)
		}
		out = append(out, samples...)
	}
	return out
}

// ReadPiSamples reads the pi files of a directory (*.jsonl) with what pi
// reported of each (*.expected.json).
func ReadPiSamples(t testing.TB, dir fs.FS) []PiSample {
	t.Helper()
	names, err := fs.Glob(dir, "*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []PiSample
	for _, n := range names {
		data, err := fs.ReadFile(dir, n)
		if err != nil {
			t.Fatal(err)
		}
		exp, err := fs.ReadFile(dir, strings.TrimSuffix(n, ".jsonl")+".expected.json")
		if err != nil {
			t.Fatal(err)
		}
		s := PiSample{Name: path.Base(n), Data: data}
		if err := json.Unmarshal(exp, &s.Expected); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out = append(out, s)
	}
	return out
}

// DecodeFile parses a pi file line by line with the codec (no repair):
// the header and the entries in file order.
func DecodeFile(t testing.TB, data []byte) (session.Header, []*session.Entry) {
	t.Helper()
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	h, err := codec.DecodeHeader(lines[0])
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	var entries []*session.Entry
	for i, l := range lines[1:] {
		e, err := codec.DecodeEntry(l)
		if err != nil {
			t.Fatalf("line %d: %v", i+2, err)
		}
		entries = append(entries, e)
	}
	return *h, entries
}

func runPiSamples(t *testing.T, b Backend) {
	for _, sample := range PiSamples(t) {
		t.Run(sample.Name, func(t *testing.T) { RunPiSample(t, b, sample) })
	}
}

// RunPiSample appends a pi file's entries to a new store of b, as a
// writer would (every write check applies), and compares the store with
// what pi reported — leaf, branch, context, labels, name, tree — and every
// entry with its line, byte for byte; again after a reopen.
func RunPiSample(t *testing.T, b Backend, sample PiSample) {
	t.Helper()
	ctx := context.Background()
	h, entries := DecodeFile(t, sample.Data)
	s := b.New(t, h)
	defer func() { s.Close(ctx) }()
	for _, e := range entries {
		if err := s.Append(ctx, e); err != nil {
			t.Fatalf("append %s: %v", e.ID, err)
		}
	}
	CheckPi(t, s, sample.Expected)
	checkLines(t, s, sample.Data)
	if b.Reopen != nil {
		s = b.Reopen(t, s)
		CheckPi(t, s, sample.Expected)
		checkLines(t, s, sample.Data)
	}
}

// CheckPi compares a store holding a pi sample with what pi reported.
func CheckPi(t *testing.T, s session.Store, want PiExpected) {
	t.Helper()
	ctx := context.Background()
	sess, err := session.New(s, TestConfig())
	if err != nil {
		t.Fatal(err)
	}
	entries, err := s.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != want.EntryCount {
		t.Errorf("entries = %d, want %d", len(entries), want.EntryCount)
	}
	h, err := s.Header(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != want.Header["id"] || h.Cwd != want.Header["cwd"] || h.Timestamp != want.Header["timestamp"] {
		t.Errorf("header = %+v, want %v", h, want.Header)
	}
	if ps, _ := want.Header["parentSession"].(string); h.ParentSession != ps {
		t.Errorf("parentSession = %q, want %q", h.ParentSession, ps)
	}
	leaf, err := s.Leaf(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantLeaf := ""
	if want.Leaf != nil {
		wantLeaf = *want.Leaf
	}
	if leaf != wantLeaf {
		t.Errorf("leaf = %q, want %q", leaf, wantLeaf)
	}
	branch, err := sess.Branch(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(branch); !slices.Equal(got, want.Branch) {
		t.Errorf("branch = %v, want %v", got, want.Branch)
	}
	c, err := sess.BuildContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.ThinkingLevel != want.Context.ThinkingLevel {
		t.Errorf("thinking level = %q, want %q", c.ThinkingLevel, want.Context.ThinkingLevel)
	}
	switch {
	case want.Context.Model == nil && c.Model != nil:
		t.Errorf("model = %+v, want none", *c.Model)
	case want.Context.Model != nil && (c.Model == nil || c.Model.Provider != want.Context.Model.Provider || c.Model.ModelID != want.Context.Model.ModelID):
		t.Errorf("model = %+v, want %+v", c.Model, *want.Context.Model)
	}
	if len(c.Messages) != want.Context.MessageCount {
		t.Errorf("context has %d messages, want %d", len(c.Messages), want.Context.MessageCount)
	}
	for i := range min(len(c.Messages), len(want.Context.Messages)) {
		m, w := c.Messages[i], want.Context.Messages[i]
		d, err := codec.MessageDigest(m)
		if err != nil {
			t.Fatal(err)
		}
		cd, err := codec.ContentDigest(m)
		if err != nil {
			t.Fatal(err)
		}
		if m.Role != w.Role || d != w.Digest || cd != w.ContentDigest {
			enc, _ := codec.EncodeMessage(m)
			t.Errorf("context message %d (%s from %s): role %s digest %s content %s; want %s %s %s\n%s",
				i, m.Role, c.Sources[i], m.Role, d[:8], cd[:8], w.Role, w.Digest[:8], w.ContentDigest[:8], enc)
		}
	}
	labels, err := sess.Labels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(labels) != len(want.Labels) {
		t.Errorf("labels = %+v, want %+v", labels, want.Labels)
	} else {
		for i, l := range labels {
			w := want.Labels[i]
			if l.ID != w.ID || l.Label != w.Label || l.Timestamp != w.Timestamp {
				t.Errorf("label %d = %+v, want %+v", i, l, w)
			}
		}
	}
	name, err := s.SessionName(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if wantName := deref(want.Name); name != wantName {
		t.Errorf("name = %q, want %q", name, wantName)
	}
	view, err := sess.Tree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var roots []string
	for _, r := range view.Roots {
		roots = append(roots, r.Entry.ID)
	}
	if !slices.Equal(roots, want.Tree.Roots) {
		t.Errorf("roots = %v, want %v", roots, want.Tree.Roots)
	}
	children := map[string][]string{}
	walk(view.Roots, func(n *session.Node) {
		var kids []string
		for _, c := range n.Children {
			kids = append(kids, c.Entry.ID)
		}
		children[n.Entry.ID] = kids
	})
	if len(children) != len(want.Tree.Nodes) {
		t.Errorf("tree has %d nodes, want %d", len(children), len(want.Tree.Nodes))
	}
	for _, n := range want.Tree.Nodes {
		if got := children[n.ID]; !slices.Equal(got, n.Children) && !(len(got) == 0 && len(n.Children) == 0) {
			t.Errorf("children of %s = %v, want %v", n.ID, got, n.Children)
		}
	}
}

func walk(nodes []*session.Node, fn func(*session.Node)) {
	stack := append([]*session.Node(nil), nodes...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		fn(n)
		stack = append(stack, n.Children...)
	}
}

func ids(es []*session.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// checkLines compares every entry the store returns, by Entries and by
// Get, with the line pi wrote: byte for byte, whatever the store keeps
// (content stored apart included).
func checkLines(t *testing.T, s session.Store, data []byte) {
	t.Helper()
	ctx := context.Background()
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))[1:]
	entries, err := s.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(lines) {
		t.Fatalf("%d entries, the file has %d", len(entries), len(lines))
	}
	for i, e := range entries {
		got, err := codec.EncodeEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, lines[i]) {
			t.Fatalf("entry %d (Entries):\n got %s\nwant %s", i, got, lines[i])
		}
		one, err := s.Get(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := codec.EncodeEntry(one); !bytes.Equal(got, lines[i]) {
			t.Fatalf("entry %s (Get):\n got %s\nwant %s", e.ID, got, lines[i])
		}
	}
}
