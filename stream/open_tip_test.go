package stream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessionkit"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
)

// contextOf is the context of st at leaf ("": its leaf), written out:
// each message with its source, then the settings.
func contextOf(t *testing.T, st session.Store, leaf string) string {
	t.Helper()
	ctx := context.Background()
	s, _ := session.New(st, system.Config())
	var opts []session.ContextOption
	if leaf != "" {
		opts = append(opts, session.FromEntry(leaf))
	}
	c, err := s.BuildContext(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, m := range c.Messages {
		j, err := codec.EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s\n", c.Sources[i], j)
	}
	fmt.Fprintf(&b, "thinking %s, model %v, tools %v\n", c.ThinkingLevel, c.Model, c.ActiveTools)
	return b.String()
}

// tipSession makes a session of 40 messages compacted at 30 (the context
// is the last few entries), snapshotted, then more entries after the
// snapshot: then(st) appends them (the tail).
func tipSession(t *testing.T, b *stream.Backend, id string, then func(st *stream.Store)) {
	t.Helper()
	ctx := context.Background()
	st, err := b.CreateStore(ctx, sessiontest.TestHeader(id))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	s, _ := session.New(st, system.Config())
	if _, err := s.AppendModelChange(ctx, "anthropic", "claude"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendThinkingLevelChange(ctx, "high"); err != nil {
		t.Fatal(err)
	}
	fill(t, st, 40, 30)
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if then != nil {
		then(st)
	}
}

// A store opened from a snapshot's tip answers its leaf and context from
// the tip and the tail, without its skeleton; anything else reads the
// skeleton first, and every answer is the whole session's.
func TestOpenFromTip(t *testing.T) {
	ctx := context.Background()
	b := snapshotBackend(t, 0)
	tipSession(t, b, "tip", func(st *stream.Store) { fill(t, st, 5, -1) })
	want := rebuild(t, b, "tip")

	st, info, err := b.OpenStoreInfo(ctx, "tip")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if !info.Deferred || info.Tail != 5 || !stream.Deferred(st) {
		t.Fatalf("open info %+v, deferred %v: want an open from the tip with a tail of 5", info, stream.Deferred(st))
	}
	eager, err := b.LoadTree(ctx, "tip") // reads the skeleton: the truth for contexts
	if err != nil {
		t.Fatal(err)
	}
	truth := sessionkit.NewMemoryStore(eager.Tree.Header())
	all, _ := eager.Tree.Entries()
	if err := truth.AppendBatch(ctx, all); err != nil {
		t.Fatal(err)
	}
	got := contextOf(t, st, "")
	if exp := contextOf(t, truth, ""); got != exp {
		t.Fatalf("context from the tip:\n%s\nwant:\n%s", got, exp)
	}
	if !strings.Contains(got, "thinking high") || !strings.Contains(got, "claude") {
		t.Fatalf("the settings above the compaction are missing:\n%s", got)
	}
	if !stream.Deferred(st) {
		t.Fatal("the context read the skeleton")
	}
	h, err := st.Header(ctx)
	if err != nil || h.ID != "tip" || !stream.Deferred(st) {
		t.Fatalf("header %+v, %v; deferred %v", h, err, stream.Deferred(st))
	}
	// A context at an entry the tip does not hold, then everything else.
	first := all[3].ID
	if got, exp := contextOf(t, st, first), contextOf(t, truth, first); got != exp {
		t.Fatalf("context at %s:\n%s\nwant:\n%s", first, got, exp)
	}
	if stream.Deferred(st) {
		t.Fatal("a context the tip cannot give did not read the skeleton")
	}
	if got := encoded(t, st); string(got) != string(want) {
		t.Fatalf("session after the load:\n%s\nwant:\n%s", got, want)
	}
	// It takes appends as a store opened otherwise does.
	fill(t, st, 3, -1)
	again, err := b.OpenStore(ctx, "tip")
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close(ctx)
	if got, exp := encoded(t, again), rebuild(t, b, "tip"); string(got) != string(exp) {
		t.Fatalf("reopened:\n%s\nwant:\n%s", got, exp)
	}
}

// Each read of a store just opened from a tip, made first, gives what a
// store opened from the skeleton gives.
func TestOpenFromTipEachRead(t *testing.T) {
	ctx := context.Background()
	b := snapshotBackend(t, 0)
	tipSession(t, b, "reads", func(st *stream.Store) { fill(t, st, 2, -1) })
	ask := map[string]func(st session.Store) string{
		"leaf":    func(st session.Store) string { l, err := st.Leaf(ctx); return fmt.Sprint(l, err) },
		"stats":   func(st session.Store) string { s, err := st.Stats(ctx); return fmt.Sprint(s, err) },
		"entries": func(st session.Store) string { es, err := st.Entries(ctx); return fmt.Sprint(len(es), err) },
		"name":    func(st session.Store) string { n, err := st.SessionName(ctx); return fmt.Sprint(n, err) },
		"types": func(st session.Store) string {
			es, err := st.FindByType(ctx, session.TypeCompaction)
			return fmt.Sprint(len(es), err)
		},
		"has": func(st session.Store) string {
			ok, err := st.(session.IDChecker).Has(ctx, "nope")
			return fmt.Sprint(ok, err)
		},
	}
	full, _ := b.LoadTree(ctx, "reads")
	truth := sessionkit.NewMemoryStore(full.Tree.Header())
	all, _ := full.Tree.Entries()
	if err := truth.AppendBatch(ctx, all); err != nil {
		t.Fatal(err)
	}
	for name, q := range ask {
		t.Run(name, func(t *testing.T) {
			st, info, err := b.OpenStoreInfo(ctx, "reads")
			if err != nil || !info.Deferred {
				t.Fatalf("open: %+v, %v", info, err)
			}
			defer st.Close(ctx)
			if got, exp := q(st), q(truth); got != exp {
				t.Fatalf("%s from a tip's store: %s, want %s", name, got, exp)
			}
			// The same, many at once.
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					if got, exp := q(st), q(truth); got != exp {
						t.Errorf("%s at once: %s, want %s", name, got, exp)
					}
				})
			}
			wg.Wait()
		})
	}
}

// A tip that does not serve leaves the skeleton to read, as without one.
func TestOpenFromTipFallsBack(t *testing.T) {
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	tests := []struct {
		name string
		tail func(t *testing.T, b *stream.Backend, st *stream.Store)
	}{
		{"a tail branching from an entry before the tip", func(t *testing.T, b *stream.Backend, st *stream.Store) {
			all, _ := st.Entries(ctx)
			e := &session.Entry{Type: session.TypeMessage, ID: "branch01", ParentID: all[4].ID, Timestamp: all[4].Timestamp,
				Message: &session.Message{Role: session.RoleUser, Content: session.TextContent("elsewhere")}}
			if err := st.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}},
		{"a compaction keeping an entry before the tip", func(t *testing.T, b *stream.Backend, st *stream.Store) {
			all, _ := st.Entries(ctx)
			s, _ := session.New(st, system.Config())
			if _, err := s.AppendCompaction(ctx, session.Compaction{Summary: "again", FirstKeptEntryID: all[10].ID, TokensBefore: 10}); err != nil {
				t.Fatal(err)
			}
		}},
		{"a tip over the size tips are written at", func(t *testing.T, b *stream.Backend, st *stream.Store) {
			obs, err := js.ObjectStore(ctx, b.Config().Stream+"_SNAPSHOTS")
			if err != nil {
				t.Fatal(err)
			}
			// The tip as written, its header line padded with blanks
			// (still a tip that loads) past the size tips are written at.
			name := headObject(t, b, st.ID()) + ".tip"
			tip, err := obs.GetBytes(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			at := bytes.IndexByte(tip, '\n')
			padded := slices.Concat(tip[:at], bytes.Repeat([]byte(" "), 2<<20), tip[at:])
			if _, err := obs.PutBytes(ctx, name, padded); err != nil {
				t.Fatal(err)
			}
		}},
		{"a tip that is not one", func(t *testing.T, b *stream.Backend, st *stream.Store) {
			obs, err := js.ObjectStore(ctx, b.Config().Stream+"_SNAPSHOTS")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := obs.PutBytes(ctx, headObject(t, b, st.ID())+".tip", []byte("{\"type\":\"session\"}\nnot json\n")); err != nil {
				t.Fatal(err)
			}
		}},
		{"the tip object gone", func(t *testing.T, b *stream.Backend, st *stream.Store) {
			obs, err := js.ObjectStore(ctx, b.Config().Stream+"_SNAPSHOTS")
			if err != nil {
				t.Fatal(err)
			}
			if err := obs.Delete(ctx, headObject(t, b, st.ID())+".tip"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := snapshotBackend(t, 0)
			id := fmt.Sprintf("fallback%d", i)
			tipSession(t, b, id, func(st *stream.Store) { tt.tail(t, b, st) })
			want := rebuild(t, b, id)
			st, info, err := b.OpenStoreInfo(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close(ctx)
			if info.Deferred || !info.FromSnapshot {
				t.Fatalf("open info %+v: want the skeleton read", info)
			}
			if got := encoded(t, st); string(got) != string(want) {
				t.Fatalf("session:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// A store opened from a tip whose snapshot is replaced twice, and so
// deleted, before its skeleton is needed reads the session from the
// stream, as far as the open had read it, then catches up on a write.
func TestOpenFromTipAfterItsSnapshotIsGone(t *testing.T) {
	ctx := context.Background()
	b := snapshotBackend(t, 0)
	tipSession(t, b, "gone", nil)
	st, info, err := b.OpenStoreInfo(ctx, "gone")
	if err != nil || !info.Deferred {
		t.Fatalf("open: %+v, %v", info, err)
	}
	defer st.Close(ctx)
	other, err := b.OpenStore(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		fill(t, other, 3, -1)
		if err := other.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	other.Close(ctx)
	n, err := st.Stats(ctx) // reads the skeleton, which is gone
	if err != nil {
		t.Fatal(err)
	}
	if n.Entries != 42 {
		t.Fatalf("%d entries, want the 42 the open had read", n.Entries)
	}
	// A write from the open's leaf conflicts and catches the store up;
	// the next one is stored.
	s, _ := session.New(st, system.Config())
	_, err = s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("late")})
	if _, ok := errors.AsType[*session.ConflictError](err); !ok {
		t.Fatalf("append from the open's leaf: %v, want a conflict", err)
	}
	fill(t, st, 1, -1)
	if got, exp := encoded(t, st), rebuild(t, b, "gone"); string(got) != string(exp) {
		t.Fatalf("after a write:\n%s\nwant:\n%s", got, exp)
	}
}
