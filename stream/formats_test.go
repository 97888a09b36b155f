package stream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// What this release does with what a later one wrote: refuses it as such
// and serves everything else (docs/operations.md, Upgrades and rollbacks).

// An index record of a later release's format is passed over by listings
// and never replaced with this release's older form; records this
// release writes name their format.
func TestIndexRecordOfANewerFormat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	defer b.Close(ctx)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("later"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, b.Config().IndexBucket())
	if err != nil {
		t.Fatal(err)
	}
	sessiontest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		e, err := kv.Get(ctx, "later")
		if err != nil || !strings.Contains(string(e.Value()), fmt.Sprintf(`"v":%d`, stream.IndexVersion)) {
			return fmt.Errorf("the record written: %v %v", e, err)
		}
		return nil
	})
	later := fmt.Sprintf(`{"id":"later","entries":99,"seq":1,"v":%d,"shape":"unknown here"}`, stream.IndexVersion+1)
	if _, err := kv.Put(ctx, "later", []byte(later)); err != nil {
		t.Fatal(err)
	}
	page, err := b.List(ctx, session.ListOptions{})
	if err != nil || len(page.Sessions) != 0 {
		t.Fatalf("listed %+v (%v); a later release's record is passed over", page.Sessions, err)
	}
	for i := range 3 {
		if err := st.Append(ctx, textEntry(fmt.Sprintf("e%d", i), "")); err != nil {
			t.Fatalf("an append with the index record of a later release: %v", err)
		}
	}
	st.Close(ctx) // flushes its index record, or tries to
	if e, err := kv.Get(ctx, "later"); err != nil || string(e.Value()) != later {
		t.Fatalf("the later release's record became %s (%v)", e.Value(), err)
	}
}

// A session of a format newer than this release writes is neither
// created here nor read: it is refused as a later release's, and the
// sessions around it are served as before.
func TestSessionOfANewerFormat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	defer b.Close(ctx)
	h := sessiontest.TestHeader("later-session")
	h.Version = session.CurrentVersion + 1
	if _, err := b.CreateStore(ctx, h); !errors.Is(err, session.ErrNewerFormat) {
		t.Fatalf("creating a session of format %d: %v", h.Version, err)
	}
	// Written by a later release: its header straight onto the stream.
	data, err := codec.EncodeHeaderMsgpack(&h)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.Publish(ctx, b.SessionSubjects(h.ID), data); err != nil {
		t.Fatal(err)
	}
	if _, err := b.OpenStore(ctx, h.ID); !errors.Is(err, session.ErrNewerFormat) {
		t.Fatalf("opening a later release's session: %v", err)
	}
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("beside"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if err := st.Append(ctx, textEntry("e1", "")); err != nil {
		t.Fatal(err)
	}
}
