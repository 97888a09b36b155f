package stream_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/snapshots"
)

// snapshotBackend is a backend whose stores snapshot every `every` entries.
func snapshotBackend(t *testing.T, every int) *stream.Backend {
	t.Helper()
	n := streams.Add(1)
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = fmt.Sprintf("T%d", n), fmt.Sprintf("t%d", n)
	cfg.SnapshotEvery = every
	b, err := stream.New(context.Background(), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fill(t *testing.T, st session.Store, n int, compactAt int) {
	t.Helper()
	ctx := context.Background()
	s, _ := session.New(st, system.Config())
	for i := range n {
		var err error
		if i == compactAt {
			leaf, _ := st.Leaf(ctx)
			_, err = s.AppendCompaction(ctx, session.Compaction{Summary: "so far", FirstKeptEntryID: leaf, TokensBefore: 10})
		} else {
			_, err = s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprint("m", i))})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func encoded(t *testing.T, st session.Store) []byte {
	t.Helper()
	ctx := context.Background()
	h, _ := st.Header(ctx)
	es, _ := st.Entries(ctx)
	data, err := codec.EncodeFile(&h, es)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := st.Leaf(ctx)
	return append(data, leaf...)
}

func TestSnapshotOpensWithTheTail(t *testing.T) {
	ctx := context.Background()
	b := snapshotBackend(t, 10)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("snap"))
	if err != nil {
		t.Fatal(err)
	}
	fill(t, st, 25, -1)
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n, err := stream.SnapshotStatus(st); n == 0 {
			return fmt.Errorf("no snapshot yet (%v)", err)
		}
		return nil
	})
	fill(t, st, 3, -1)
	want := encoded(t, st)
	st.Close(ctx)

	got, info, err := b.OpenStoreInfo(ctx, "snap")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close(ctx)
	if !info.FromSnapshot || info.Tail == 0 || info.Tail >= 28 || info.Fallback != nil {
		t.Fatalf("open info = %+v, want a snapshot and a short tail", info)
	}
	if !bytes.Equal(encoded(t, got), want) {
		t.Fatal("the session opened from a snapshot differs from the one written")
	}
	// The reopened store appends where the stream is.
	fill(t, got, 1, -1)
}

func TestCompactionTriggersASnapshot(t *testing.T) {
	ctx := context.Background()
	b := snapshotBackend(t, 0)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("compacted"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	fill(t, st, 5, -1)
	if n, _ := stream.SnapshotStatus(st); n != 0 {
		t.Fatalf("%d snapshots before any compaction", n)
	}
	fill(t, st, 1, 0)
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n, err := stream.SnapshotStatus(st); n == 0 || err != nil {
			return fmt.Errorf("runs %d, %v", n, err)
		}
		return nil
	})
}

// A snapshot that cannot be trusted is never used: the session is rebuilt
// from the stream and comes out right. A bad skeleton is found at open; a
// bad body when the entries are first read.
func TestBadSnapshotsFallBack(t *testing.T) {
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	tests := []struct {
		name   string
		atOpen bool
		// spoil damages the snapshot named name of session id.
		spoil func(t *testing.T, b *stream.Backend, obs jetstream.ObjectStore, id, name string)
	}{
		{"other version", true, func(t *testing.T, b *stream.Backend, obs jetstream.ObjectStore, id, name string) {
			rewriteMeta(t, obs, name+".skel", "sessionlog-snapshot", "99")
		}},
		{"skeleton checksum mismatch", true, func(t *testing.T, b *stream.Backend, obs jetstream.ObjectStore, id, name string) {
			rewriteMeta(t, obs, name+".skel", "sha256", "00")
		}},
		{"skeleton bytes that are not its digest's", true, func(t *testing.T, b *stream.Backend, obs jetstream.ObjectStore, id, name string) {
			// The description and the metadata agree on a digest the
			// bytes do not have: only hashing the bytes finds it.
			rewriteDigest(t, js, b.Config().Stream+"_SNAPSHOTS", name+".skel", []byte("other bytes"))
		}},
		{"skeleton missing", true, func(t *testing.T, b *stream.Backend, obs jetstream.ObjectStore, id, name string) {
			if err := obs.Delete(ctx, name+".skel"); err != nil {
				t.Fatal(err)
			}
		}},
		{"skeleton that is not one", true, func(t *testing.T, b *stream.Backend, obs jetstream.ObjectStore, id, name string) {
			replaceObject(t, obs, name+".skel", []byte("\x91\x01"), "sha256")
		}},
		{"snapshot of an earlier session of the same id", true, func(t *testing.T, b *stream.Backend, obs jetstream.ObjectStore, id, name string) {
			// Someone purged the session without removing its snapshot,
			// and it was created again.
			s, _ := js.Stream(ctx, b.Config().Stream)
			if err := s.Purge(ctx, jetstream.WithPurgeSubject(b.SessionSubjects(id))); err != nil {
				t.Fatal(err)
			}
			h := sessiontest.TestHeader(id)
			h.Timestamp = "2025-06-01T00:00:00.000Z" // a new session, not a retried create
			st, err := b.CreateStore(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			fill(t, st, 2, -1)
			st.Close(ctx)
		}},
		{"body checksum mismatch", false, func(t *testing.T, b *stream.Backend, obs jetstream.ObjectStore, id, name string) {
			rewriteMeta(t, obs, name+".skel", "body-sha256", "00")
		}},
		{"body missing", false, func(t *testing.T, b *stream.Backend, obs jetstream.ObjectStore, id, name string) {
			if err := obs.Delete(ctx, name+".body"); err != nil {
				t.Fatal(err)
			}
		}},
		{"body that is not a session", false, func(t *testing.T, b *stream.Backend, obs jetstream.ObjectStore, id, name string) {
			body := []byte("not json\n")
			if _, err := obs.PutBytes(ctx, name+".body", body); err != nil {
				t.Fatal(err)
			}
			rewriteMeta(t, obs, name+".skel", "body-sha256", sha(body))
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := snapshotBackend(t, 0)
			id := fmt.Sprintf("bad%d", i)
			snapshotted(t, b, id, 12)
			obs, err := js.ObjectStore(ctx, b.Config().Stream+"_SNAPSHOTS")
			if err != nil {
				t.Fatal(err)
			}
			tt.spoil(t, b, obs, id, headObject(t, b, id))
			// What a full rebuild gives is the truth.
			want := rebuild(t, b, id)
			got, info, err := b.OpenStoreInfo(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close(ctx)
			if tt.atOpen && (info.FromSnapshot || !errors.Is(info.Fallback, snapshots.ErrUnusable)) {
				t.Fatalf("open info = %+v, want a fallback for a bad skeleton", info)
			}
			if !tt.atOpen && !info.FromSnapshot {
				t.Fatalf("open info = %+v, want the skeleton used", info)
			}
			if !bytes.Equal(encoded(t, got), want) {
				t.Fatal("fallback gave another session than a full rebuild")
			}
			if fb := stream.Fallback(ctx, got); !tt.atOpen && !errors.Is(fb, snapshots.ErrUnusable) {
				t.Fatalf("reading the entries: fallback %v, want a bad body reported", fb)
			}
		})
	}
}

func replaceObject(t *testing.T, obs jetstream.ObjectStore, name string, data []byte, shaKey string) {
	t.Helper()
	ctx := context.Background()
	info, err := obs.GetInfo(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	meta := info.ObjectMeta
	meta.Metadata[shaKey] = sha(data)
	if _, err := obs.Put(ctx, meta, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

// snapshotted makes a session of n entries with a snapshot of them all.
func snapshotted(t *testing.T, b *stream.Backend, id string, n int) {
	t.Helper()
	ctx := context.Background()
	st, err := b.CreateStore(ctx, sessiontest.TestHeader(id))
	if err != nil {
		t.Fatal(err)
	}
	fill(t, st, n, -1)
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// rebuild reads a session from the stream alone.
func rebuild(t *testing.T, b *stream.Backend, id string) []byte {
	t.Helper()
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	s, _ := js.Stream(ctx, b.Config().Stream)
	h := session.Header{}
	tr := (*session.Tree)(nil)
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{b.SessionSubjects(id)}})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := cons.Info(ctx)
	batch, err := cons.Fetch(int(info.NumPending), jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if tr == nil {
			hh, err := decodeHeader(m.Data())
			if err != nil {
				t.Fatal(err)
			}
			h = *hh
			tr = session.NewTree(h)
			continue
		}
		e, err := decodeEntry(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	data, err := codec.EncodeFile(&h, sessiontest.Entries(t, tr))
	if err != nil {
		t.Fatal(err)
	}
	return append(data, tr.Leaf()...)
}

// headObject is the object holding a session's current snapshot.
func headObject(t *testing.T, b *stream.Backend, id string) string {
	t.Helper()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(context.Background(), b.Config().Stream+"_SNAPSHOTS_HEADS")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var h struct{ Object string }
	if err := json.Unmarshal(e.Value(), &h); err != nil || h.Object == "" {
		t.Fatalf("head %s: %v", e.Value(), err)
	}
	return h.Object
}

// rewriteDigest rewrites the description of object name in bucket so
// that its digest, and its metadata's, are those of other: the object's
// own bytes are left as they are.
func rewriteDigest(t *testing.T, js jetstream.JetStream, bucket, name string, other []byte) {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, "OBJ_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	subject := "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
	msg, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]any
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(other)
	info["digest"] = "SHA-256=" + base64.URLEncoding.EncodeToString(sum[:])
	info["metadata"].(map[string]any)["sha256"] = hex.EncodeToString(sum[:])
	data, _ := json.Marshal(info)
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
}

func rewriteMeta(t *testing.T, obs jetstream.ObjectStore, id, key, val string) {
	t.Helper()
	ctx := context.Background()
	body, err := obs.GetBytes(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := obs.GetInfo(ctx, id)
	meta := info.ObjectMeta
	meta.Metadata[key] = val
	if _, err := obs.Put(ctx, meta, bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
}

// Each snapshot is a new skeleton and a new body segment; only the
// current snapshot and the one before it are kept, and deleting the
// session removes them.
func TestSnapshotsDoNotPileUp(t *testing.T) {
	ctx := context.Background()
	b := snapshotBackend(t, 2)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("piles"))
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		before, _ := stream.SnapshotStatus(st)
		fill(t, st, 2, -1)
		sessiontest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
			if n, _ := stream.SnapshotStatus(st); n <= before {
				return errors.New("snapshot not written yet")
			}
			return nil
		})
	}
	st.Close(ctx)
	js, _ := jetstream.New(nc)
	obs, err := js.ObjectStore(ctx, b.Config().Stream+"_SNAPSHOTS")
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		list, err := obs.List(ctx)
		if errors.Is(err, jetstream.ErrNoObjectsFound) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	// The skeletons of the current snapshot and the one before, and
	// their body segments: nothing else.
	object, prev, segs, prevSegs, err := stream.SnapshotHead(ctx, b, "piles")
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{object + ".skel": true, prev + ".skel": true}
	for _, s := range append(segs, prevSegs...) {
		kept[s] = true
	}
	if n := count(); n != len(kept) {
		t.Fatalf("%d snapshot objects kept, want the %d the head names", n, len(kept))
	}
	if err := b.Delete(ctx, "piles"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d snapshot objects left after delete", n)
	}
}

// A store opened from a snapshot takes appends and answers leaf, name and
// stats without reading the snapshot's body: with the body gone, nothing
// notices until the entries are read (then from the stream).
func TestSnapshotOpenIsLazy(t *testing.T) {
	ctx := context.Background()
	b := snapshotBackend(t, 0)
	snapshotted(t, b, "lazy", 12)
	js, _ := jetstream.New(nc)
	obs, _ := js.ObjectStore(ctx, b.Config().Stream+"_SNAPSHOTS")
	if err := obs.Delete(ctx, headObject(t, b, "lazy")+".body"); err != nil {
		t.Fatal(err)
	}
	got, info, err := b.OpenStoreInfo(ctx, "lazy")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close(ctx)
	if !info.FromSnapshot {
		t.Fatalf("open info %+v", info)
	}
	stats, _ := got.Stats(ctx)
	leaf, _ := got.Leaf(ctx)
	if stats.Entries != 12 || leaf == "" {
		t.Fatalf("stats %+v leaf %q", stats, leaf)
	}
	s, _ := session.New(got, system.Config())
	e, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("lazy append")})
	if err != nil || e.ParentID != leaf {
		t.Fatalf("append to a store opened from a skeleton: %v", err)
	}
	if seq, err := got.Sequence(ctx); err != nil || seq == 0 {
		t.Fatalf("sequence: %d %v", seq, err)
	}
	if fb := stream.Fallback(ctx, got); fb != nil {
		t.Fatalf("the body was read before any entry was: %v", fb)
	}
	want := rebuild(t, b, "lazy")
	if !bytes.Equal(encoded(t, got), want) {
		t.Fatal("entries read after a lazy open differ from the stream")
	}
	if fb := stream.Fallback(ctx, got); !errors.Is(fb, snapshots.ErrUnusable) {
		t.Fatalf("reading the entries without a body: fallback %v", fb)
	}
}
