package clustertest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamsHolding returns the streams of nc's account one of whose
// messages holds needle (in its subject or data), read raw, every
// message of every stream: what tests of deleting and redacting search.
func StreamsHolding(t testing.TB, nc *nats.Conn, needle string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				continue // deleted
			}
			if bytes.Contains(m.Data, []byte(needle)) || bytes.Contains([]byte(m.Subject), []byte(needle)) {
				out = append(out, name)
				break
			}
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
