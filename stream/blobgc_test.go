package stream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/blobs"
)

// blobBackend offloads anything of 100 bytes or more, keeps unnamed blobs
// an hour, and reads a clock the test moves.
func blobBackend(t *testing.T) (*stream.Backend, *time.Duration) {
	cfg := stream.DefaultConfig()
	cfg.OffloadThreshold = 100
	cfg.BlobGrace = time.Hour
	b := newBackendWith(t, cfg)
	skew := new(time.Duration)
	stream.SetBlobClock(b, func() time.Time { return time.Now().Add(*skew) })
	return b, skew
}

func customWith(id, parent, data string) *session.Entry {
	return &session.Entry{Type: session.TypeCustom, ID: id, ParentID: parent, Timestamp: "2026-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "blob", Data: session.Raw(`"` + data + `"`)}}
}

func bigText(c string) string { return strings.Repeat(c, 500) }

// refOf is the reference the store made of an entry's data.
func refOf(t *testing.T, st *stream.Store, id string) session.BlobRef {
	t.Helper()
	e, err := st.Refs().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	refs := e.BlobRefs()
	if len(refs) != 1 {
		t.Fatalf("entry %s names %d blobs, want 1", id, len(refs))
	}
	return refs[0]
}

func TestCollectBlobsKeepsWhatIsNamedOrYoung(t *testing.T) {
	ctx := context.Background()
	b, skew := blobBackend(t)
	kept, err := b.CreateStore(ctx, header("kept", time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close(ctx)
	if err := kept.Append(ctx, customWith("a1", "", bigText("a"))); err != nil {
		t.Fatal(err)
	}
	gone, err := b.CreateStore(ctx, header("gone", time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if err := gone.Append(ctx, customWith("b1", "", bigText("b"))); err != nil {
		t.Fatal(err)
	}
	goneRef := refOf(t, gone, "b1")
	gone.Close(ctx)
	if err := b.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	orphan, err := b.Blobs().Put(ctx, []byte(`"`+bigText("c")+`"`))
	if err != nil {
		t.Fatal(err)
	}

	// Chunks no meta names: what the loser of two first puts leaves.
	bucket := b.Config().BlobBucket()
	if _, err := b.JetStream().Publish(ctx, "$O."+bucket+".C.orphanNUID", []byte("lost chunk")); err != nil {
		t.Fatal(err)
	}
	st, err := b.CollectBlobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Blobs != 3 || st.Young != 3 || st.Deleted != 0 || st.Orphans != 0 {
		t.Fatalf("within the grace period: %+v, want 3 blobs, all young", st)
	}

	*skew = 2 * time.Hour
	st, err = b.CollectBlobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Deleted != 2 || st.Referenced != 1 || st.Orphans != 1 {
		t.Fatalf("after the grace period: %+v, want 2 deleted, 1 referenced, 1 orphan", st)
	}
	for _, ref := range []session.BlobRef{goneRef, orphan} {
		if _, err := b.Blobs().Get(ctx, ref); !errors.Is(err, blobs.ErrNotFound) {
			t.Fatalf("blob %s: %v, want ErrBlobNotFound", ref.SHA256, err)
		}
	}
	kept2, err := b.OpenStore(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	defer kept2.Close(ctx)
	e, err := kept2.Get(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Custom().Data) != `"`+bigText("a")+`"` {
		t.Fatalf("the named blob did not survive: %.40s", e.Custom().Data)
	}
	if used, err := b.Blobs().Usage(ctx); err != nil || used == 0 {
		t.Fatalf("usage %d, %v", used, err)
	}
}

// An append naming an old blob and a collection deciding to delete it, in
// both orders: the blob survives, or the append puts it again; a
// reference alone is refused, never stored dangling.
func TestCollectBlobsRacesAppends(t *testing.T) {
	ctx := context.Background()
	t.Run("touch before the delete marker", func(t *testing.T) {
		b, st, ref, x := oldBlob(t, "x")
		appended := make(chan error, 1)
		stream.OnBlobDelete(b, func(name string) {
			if name == ref.SHA256 {
				appended <- st.Append(ctx, customWith("n1", "", x))
			}
		})
		cs, err := b.CollectBlobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-appended; err != nil {
			t.Fatal(err)
		}
		if cs.Deleted != 0 || cs.Raced != 1 {
			t.Fatalf("collection %+v, want the blob kept as raced", cs)
		}
		checkResolves(t, b, "s", "n1", x)
	})
	t.Run("delete marker before the touch", func(t *testing.T) {
		b, st, ref, x := oldBlob(t, "y")
		collected := make(chan blobs.CollectStats, 2)
		stream.OnBlobTouch(b, func(name string) {
			if name == ref.SHA256 && len(collected) == 0 {
				cs, err := b.CollectBlobs(ctx)
				if err != nil {
					t.Error(err)
				}
				collected <- cs
			}
		})
		// The content is at hand: the append puts the blob again.
		if err := st.Append(ctx, customWith("n1", "", x)); err != nil {
			t.Fatal(err)
		}
		if cs := <-collected; cs.Deleted != 1 {
			t.Fatalf("collection %+v, want the blob deleted before the touch", cs)
		}
		checkResolves(t, b, "s", "n1", x)

		// A reference alone to a blob collected under it is refused.
		ref2, err := b.Blobs().Put(ctx, []byte(`"`+bigText("z")+`"`))
		if err != nil {
			t.Fatal(err)
		}
		stream.OnBlobTouch(b, func(name string) {
			if name == ref2.SHA256 && len(collected) == 0 {
				cs, _ := b.CollectBlobs(ctx)
				collected <- cs
			}
		})
		stream.SetBlobClock(b, func() time.Time { return time.Now().Add(4 * time.Hour) })
		e := &session.Entry{Type: session.TypeCustom, ID: "n2", ParentID: "n1", Timestamp: "2026-01-01T00:00:00.000Z", Body: &session.Custom{CustomType: "blob", Data: ref2.Raw()}}
		if err := st.Append(ctx, e); !errors.Is(err, blobs.ErrNotFound) {
			t.Fatalf("append of a reference to a collected blob: %v, want ErrBlobNotFound", err)
		}
		if has, _ := st.Has(ctx, "n2"); has {
			t.Fatal("the entry naming a collected blob was stored")
		}
	})
}

// oldBlob is a backend holding one blob (text made of c) past its grace
// period, and an empty session s.
func oldBlob(t *testing.T, c string) (*stream.Backend, *stream.Store, session.BlobRef, string) {
	ctx := context.Background()
	b, skew := blobBackend(t)
	x := bigText(c)
	ref, err := b.Blobs().Put(ctx, []byte(`"`+x+`"`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.CreateStore(ctx, header("s", time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(ctx) })
	*skew = 2 * time.Hour
	return b, st, ref, x
}

func checkResolves(t *testing.T, b *stream.Backend, id, entry, want string) {
	t.Helper()
	ctx := context.Background()
	st, err := b.OpenStore(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	e, err := st.Get(ctx, entry)
	if err != nil {
		t.Fatalf("entry %s of %s does not resolve: %v", entry, id, err)
	}
	if string(e.Custom().Data) != `"`+want+`"` {
		t.Fatalf("entry %s resolves to %.40s", entry, e.Custom().Data)
	}
}
