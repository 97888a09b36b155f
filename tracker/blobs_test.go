package tracker_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/tracker"
)

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func imageEntry(t *testing.T, id, parent string, size int) (*session.Entry, string) {
	b := make([]byte, size)
	rand.Read(b)
	data := base64.StdEncoding.EncodeToString(b)
	return &session.Entry{Type: session.TypeMessage, ID: id, ParentID: parent, Timestamp: "2026-01-01T00:00:00.000Z",
		Message: &session.Message{Role: session.RoleUser, Timestamp: 1, Content: session.BlocksContent(
			session.ContentBlock{Type: session.BlockImage, Body: &session.ImageBlock{Data: data, MimeType: "image/png"}})}}, data
}

// A replica following sessions full of images holds their trees, not
// their images: its memory grows by a small part of the image bytes, and
// what it resolves goes through a cache bounded in bytes. Entries and
// events still hand out the images themselves.
func TestReplicaMemoryFollowsTreesNotImages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := streamConfig()
	cfg.OffloadThreshold = 4 << 10
	cfg.BlobCacheBytes = 2 << 20
	w := backend(t, connect(t), cfg)
	const sessions, perSession, size = 16, 6, 256 << 10 // 24 MiB of images
	var last string
	for s := range sessions {
		st, err := w.CreateStore(ctx, sessiontest.TestHeader(fmt.Sprintf("s%d", s)))
		if err != nil {
			t.Fatal(err)
		}
		parent := ""
		for i := range perSession {
			e, data := imageEntry(t, fmt.Sprintf("e%d", i), parent, size)
			if err := st.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
			parent, last = e.ID, data
		}
		st.Close(ctx)
	}
	rb := backend(t, connect(t), cfg)
	before := heapInUse()
	r, err := tracker.Start(ctx, rb, tracker.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	for s := range sessions {
		if err := r.Read(ctx, fmt.Sprintf("s%d", s), func(tr *session.Tree) error {
			if tr.Len() != perSession {
				return fmt.Errorf("%d entries", tr.Len())
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	held := heapInUse() - min(before, heapInUse())
	images := uint64(sessions * perSession * size * 4 / 3)
	t.Logf("replica holding %d sessions: heap +%d KiB for %d KiB of images", sessions, held>>10, images>>10)
	if held > images/8 {
		t.Fatalf("the replica's heap grew %d KiB for %d KiB of images: it holds the images", held>>10, images>>10)
	}
	es, err := r.Entries(ctx, fmt.Sprintf("s%d", sessions-1))
	if err != nil {
		t.Fatal(err)
	}
	if got := es[perSession-1].Message.Content.Blocks[0].Image().Data; got != last {
		t.Fatal("the replica's entries do not hold the image")
	}
	if c := rb.Blobs().Cached(); c > cfg.BlobCacheBytes {
		t.Fatalf("blob cache holds %d bytes, bound %d", c, cfg.BlobCacheBytes)
	}

	// Events: the image in place by default, the reference with Refs.
	got := make(chan *session.Entry, 2)
	for _, refs := range []bool{false, true} {
		ec := tracker.DefaultEventConfig(fmt.Sprintf("img-%v", refs), session.TypeMessage)
		ec.Refs = refs
		sub, err := tracker.Subscribe(ctx, rb, ec, func(_ context.Context, ev tracker.Event) error {
			if ev.Session == "s0" && ev.Entry.ID == "e0" {
				got <- ev.Entry
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		e := <-got
		sub.Close(ctx)
		if e.HasBlobs() != refs {
			t.Fatalf("event with refs=%v: holds references %v", refs, e.HasBlobs())
		}
		if !refs && len(e.Message.Content.Blocks[0].Image().Data) < size {
			t.Fatal("event image missing")
		}
	}
}
