// Package sessiontest is the conformance suite every session.Store backend
// runs: the scenario files under testdata/scenarios drive the Session API,
// and the pi sample files under testdata/pi are replayed and compared with
// what pi itself reported for them.
package sessiontest

import (
	"context"
	"embed"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
)

//go:embed testdata
var testdata embed.FS

// Backend describes a store implementation to the suite.
type Backend struct {
	Name string
	// New creates an empty store for the session h.
	New func(t *testing.T, h session.Header) session.Store
	// Reopen closes s and opens the same session again, as a new process
	// would. Nil for backends that keep nothing (the memory store).
	Reopen func(t *testing.T, s session.Store) session.Store
}

// Run runs every conformance test against b.
func Run(t *testing.T, b Backend) {
	t.Helper()
	t.Run("scenarios", func(t *testing.T) { runScenarios(t, b) })
	t.Run("pi-samples", func(t *testing.T) { runPiSamples(t, b) })
	t.Run("append-validation", func(t *testing.T) { runAppendValidation(t, b) })
	t.Run("imported-dangling-label", func(t *testing.T) { runImportedDanglingLabel(t, b) })
}

// runImportedDanglingLabel: a label of a missing entry, refused from a
// writer, is what pi's loader keeps from a damaged file; an import
// (session.ForImport) stores it, and the session stays readable, with the
// label inert and the tree's path going through it, after a reopen too.
func runImportedDanglingLabel(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, TestHeader("dangling"))
	defer func() { s.Close(ctx) }()
	root := &session.Entry{Type: session.TypeMessage, ID: "d1", Timestamp: "2025-01-01T00:00:01.000Z",
		Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("hi"), Timestamp: 1}}
	label := &session.Entry{Type: session.TypeLabel, ID: "d2", ParentID: "d1", Timestamp: "2025-01-01T00:00:02.000Z", Body: &session.Label{TargetID: "gone", Label: "x"}}
	if err := s.Append(ctx, root); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, label); !errorsIs(err, session.ErrEntryNotFound) {
		t.Fatalf("a writer's label of a missing entry: %v, want ErrEntryNotFound", err)
	}
	if err := s.Append(session.ForImport(ctx), label); err != nil {
		t.Fatalf("an import's label of a missing entry: %v", err)
	}
	check := func(when string) {
		t.Helper()
		sess, err := session.New(s, TestConfig())
		if err != nil {
			t.Fatal(err)
		}
		if leaf, err := s.Leaf(ctx); err != nil || leaf != "d2" {
			t.Fatalf("%s: leaf %q (%v), want d2", when, leaf, err)
		}
		c, err := sess.BuildContext(ctx)
		if err != nil {
			t.Fatalf("%s: context: %v", when, err)
		}
		if len(c.Messages) != 1 {
			t.Fatalf("%s: %d messages in the context, want 1", when, len(c.Messages))
		}
		ls, err := sess.Labels(ctx)
		if err != nil || len(ls) != 0 {
			t.Errorf("%s: labels %v (%v), want none (the label's target is missing)", when, ls, err)
		}
	}
	check("after the import")
	if b.Reopen != nil {
		s = b.Reopen(t, s)
		check("after a reopen")
	}
}

// SteppingClock starts at a fixed instant and moves one second per call.
// It is safe for concurrent use.
type SteppingClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewSteppingClock returns a clock starting at 2025-01-01T00:00:00Z.
func NewSteppingClock() *SteppingClock {
	return &SteppingClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now implements session.Clock.
func (c *SteppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// SequentialIDs yields e0001, e0002, …. It is safe for concurrent use.
type SequentialIDs struct {
	mu sync.Mutex
	n  int
}

// NewID implements session.IDSource.
func (s *SequentialIDs) NewID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return fmt.Sprintf("e%04d", s.n)
}

// TestConfig is a deterministic session.Config.
func TestConfig() session.Config {
	return session.Config{Clock: NewSteppingClock(), IDs: &SequentialIDs{}}
}

// TestHeader returns a header for a test session.
func TestHeader(id string) session.Header {
	return session.Header{
		Version: session.CurrentVersion, ID: id,
		Timestamp: "2025-01-01T00:00:00.000Z", Cwd: "/work",
	}
}

func runAppendValidation(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.New(t, TestHeader("validation"))
	defer s.Close(ctx)
	root := &session.Entry{Type: session.TypeMessage, ID: "r1", Timestamp: "2025-01-01T00:00:01.000Z",
		Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("hi"), Timestamp: 1}}
	if err := s.Append(ctx, root); err != nil {
		t.Fatalf("append root: %v", err)
	}
	msg := func(id, parent string) *session.Entry {
		return &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: "2025-01-01T00:00:02.000Z",
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("x"), Timestamp: 2}}
	}
	const ts = "2025-01-01T00:00:02.000Z"
	tests := []struct {
		name    string
		entry   *session.Entry
		wantErr error
	}{
		{"duplicate id", msg("r1", ""), session.ErrDuplicateID},
		{"missing parent", msg("r2", "nope"), session.ErrParentNotFound},
		{"empty id", msg("", "r1"), session.ErrInvalidEntry},
		{"id with space", msg("a b", "r1"), session.ErrInvalidEntry},
		{"own parent", msg("r3", "r3"), session.ErrInvalidEntry},
		{"no type", &session.Entry{ID: "r4", ParentID: "r1"}, session.ErrInvalidEntry},
		{"header type", &session.Entry{Type: session.TypeSession, ID: "r5", ParentID: "r1"}, session.ErrInvalidEntry},
		{"message without message", &session.Entry{Type: session.TypeMessage, ID: "r6", ParentID: "r1"}, session.ErrInvalidEntry},
		{"label of missing entry", &session.Entry{Type: session.TypeLabel, ID: "r7", ParentID: "r1", Timestamp: "2025-01-01T00:00:03.000Z", Body: &session.Label{TargetID: "zz", Label: "x"}}, session.ErrEntryNotFound},
		{"custom without type", &session.Entry{Type: session.TypeCustom, ID: "r8", ParentID: "r1"}, session.ErrInvalidEntry},
		// Fields of the wrong kind or range: each once made a session unreadable.
		{"entry timestamp not a time", withTS(msg("v1", "r1"), "yesterday"), session.ErrInvalidEntry},
		{"message timestamp 1.5", withExtra(msg("v2", "r1"), "timestamp", "1.5"), session.ErrInvalidEntry},
		{"message timestamp 1e400", withExtra(msg("v3", "r1"), "timestamp", "1e400"), session.ErrInvalidEntry},
		{"message timestamp negative", withMsgTS(msg("v4", "r1"), -1), session.ErrInvalidEntry},
		{"message timestamp past JS dates", withMsgTS(msg("v5", "r1"), session.MaxEpochMillis+1), session.ErrInvalidEntry},
		{"unknown role", withRole(msg("v6", "r1"), "wizard"), session.ErrInvalidEntry},
		{"compaction without firstKeptEntryId", &session.Entry{Type: session.TypeCompaction, ID: "v7", ParentID: "r1", Timestamp: ts, Body: &session.Compaction{Summary: "s"}}, session.ErrInvalidEntry},
		{"thinking level unknown", &session.Entry{Type: session.TypeThinkingLevelChange, ID: "v8", ParentID: "r1", Timestamp: ts, Body: &session.ThinkingLevelChange{ThinkingLevel: "max"}}, session.ErrInvalidEntry},
		{"negative tokens", &session.Entry{Type: session.TypeCompaction, ID: "v9", ParentID: "r1", Timestamp: ts, Body: &session.Compaction{FirstKeptEntryID: "r1", TokensBefore: -5}}, session.ErrInvalidEntry},
		{"image without mime type", withContent(msg("v10", "r1"), session.ContentBlock{Type: session.BlockImage, Body: &session.ImageBlock{Data: "aGk="}}), session.ErrInvalidEntry},
		{"block whose type is no type name", withContent(msg("v11", "r1"), session.ContentBlock{Type: "video clip\n"}), session.ErrInvalidEntry},
		{"name too long", &session.Entry{Type: session.TypeSessionInfo, ID: "v12", ParentID: "r1", Timestamp: ts, Body: &session.NameChange{Name: strings.Repeat("n", session.MaxNameLen+1)}}, session.ErrInvalidEntry},
		{"bad details JSON", &session.Entry{Type: session.TypeCustom, ID: "r9", ParentID: "r1", Body: &session.Custom{CustomType: "x", Data: session.Raw("{oops")}}, session.ErrInvalidEntry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := s.Entries(ctx)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Append(ctx, tt.entry)
			if err == nil {
				t.Fatalf("Append succeeded, want an error")
			}
			if tt.wantErr != nil && !errorsIs(err, tt.wantErr) {
				t.Fatalf("Append error = %v, want %v", err, tt.wantErr)
			}
			after, err := s.Entries(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before) {
				t.Fatalf("a refused append changed the store: %d entries, had %d", len(after), len(before))
			}
		})
	}
	if b.Reopen != nil {
		s = b.Reopen(t, s)
		entries, err := s.Entries(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].ID != "r1" {
			t.Fatalf("after reopen: %d entries, want only r1", len(entries))
		}
	}
}

// CheckFor polls fn until it returns nil, failing the test when total has
// passed: tests wait for asynchronous effects with it, never with bare
// sleeps.
func CheckFor(t testing.TB, total, every time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	var err error
	for time.Now().Before(deadline) {
		if err = fn(); err == nil {
			return
		}
		time.Sleep(every)
	}
	t.Fatalf("condition not met after %v: %v", total, err)
}

func withTS(e *session.Entry, ts string) *session.Entry { e.Timestamp = ts; return e }

func withMsgTS(e *session.Entry, ms int64) *session.Entry { e.Message.Timestamp = ms; return e }

func withRole(e *session.Entry, role string) *session.Entry { e.Message.Role = role; return e }

// withExtra gives the message a member as a decoder keeps one of the wrong
// kind: in Extra, beside the typed field.
func withExtra(e *session.Entry, key, raw string) *session.Entry {
	e.Message.Extra = append(e.Message.Extra, session.Field{Key: key, Value: session.Raw(raw)})
	return e
}

func withContent(e *session.Entry, blocks ...session.ContentBlock) *session.Entry {
	e.Message.Content = session.BlocksContent(blocks...)
	return e
}

// Entries returns the entries of a complete tree, failing the test if tr
// is partial.
func Entries(t testing.TB, tr *session.Tree) []*session.Entry {
	t.Helper()
	es, err := tr.Entries()
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// Must returns what f returns, failing the test on its error.
func Must[T any](t testing.TB, f func() (T, error)) T {
	t.Helper()
	v, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
