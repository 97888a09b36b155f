package stream

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestAmbiguous: the errors after which a request's outcome is unknown,
// and is sent again, and those that are answers.
func TestAmbiguous(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{nats.ErrTimeout, true},
		{nats.ErrNoResponders, true},
		{jetstream.ErrNoStreamResponse, true},
		// A request in flight when its server drops: the writer on a
		// paused node was told "server is disconnected" before this.
		{fmt.Errorf("stream: read barrier: %w", nats.ErrDisconnected), true},
		{nats.ErrConnectionClosed, false},
		{context.Canceled, false},
		{errWrongLastSeq, false},
		{errors.New("anything else"), false},
	} {
		if got := ambiguous(c.err); got != c.want {
			t.Errorf("ambiguous(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
