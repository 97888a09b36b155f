package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// TestFreshReadsOnOneServerAlone: on a server without a cluster (the
// embedded default) a fresh read writes no barrier and still sees every
// write acknowledged before it, made through another backend; a backend
// made to take the barrier writes one per read (the counter counts).
func TestFreshReadsOnOneServerAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	writer := newBackend(t)
	defer writer.Close(ctx)
	fast := newBackendOn(t, writer.Config())
	defer fast.Close(ctx)
	barriered := newBackendOn(t, writer.Config())
	defer barriered.Close(ctx)
	stream.AlwaysBarrier(barriered)

	w, err := writer.CreateStore(ctx, sessiontest.TestHeader("alone"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	if err := w.Append(ctx, textEntry("e0", "")); err != nil {
		t.Fatal(err)
	}
	readers := map[string]*stream.Store{}
	for name, b := range map[string]*stream.Backend{"fast": fast, "barriered": barriered} {
		st, err := b.OpenStore(ctx, "alone")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close(ctx)
		readers[name] = st
	}
	const n = 40
	for i := 1; i <= n; i++ {
		id, parent := fmt.Sprintf("e%d", i), fmt.Sprintf("e%d", i-1)
		if err := w.Append(ctx, textEntry(id, parent)); err != nil {
			t.Fatal(err)
		}
		for name, st := range readers {
			if err := st.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			if leaf, err := st.Leaf(ctx); err != nil || leaf != id {
				t.Fatalf("%s reader after the acknowledgement of %s: leaf %q, %v", name, id, leaf, err)
			}
		}
	}
	if got := stream.BarriersWritten(fast); got != 0 {
		t.Errorf("fresh reads of a stream on one server alone wrote %d barriers, want none", got)
	}
	if got := stream.BarriersWritten(barriered); got < n {
		t.Errorf("a backend made to take the barrier wrote %d for %d reads", got, n)
	}
}

// TestSoloReadRefusesAMirrorsAnswer: a mirror that serves direct gets for
// the stream answers some of them from its own copy, which may be behind:
// such an answer is not taken as the stream's.
func TestSoloReadRefusesAMirrorsAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBackend(t)
	defer b.Close(ctx)
	st, err := b.CreateStore(ctx, sessiontest.TestHeader("mirrored"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if err := st.Append(ctx, textEntry("e0", "")); err != nil {
		t.Fatal(err)
	}
	cfg := b.Config()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	mirror := cfg.Stream + "-MIRROR"
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: mirror, Mirror: &jetstream.StreamSource{Name: cfg.Stream},
		MirrorDirect: true, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	defer js.DeleteStream(context.Background(), mirror)
	subject := cfg.Prefix + ".>"
	// The mirror serves direct gets once it has caught up: from then on
	// it takes its share of them.
	var ours, theirs int
	sessiontest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		for range 20 {
			_, ok, err := stream.SoloLast(ctx, b, subject)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				ours++
			} else {
				theirs++
			}
		}
		if ours == 0 || theirs == 0 {
			return fmt.Errorf("%d answers taken as the stream's, %d refused; want some of each (the mirror answers some)", ours, theirs)
		}
		return nil
	})
}
