package jsx

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
		{&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence}, false},
		{errors.New("anything else"), false},
	} {
		if got := Ambiguous(c.err); got != c.want {
			t.Errorf("ambiguous(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestAttemptEndsAtAnElection: a request in flight when the stream elects
// a leader went to nobody; the attempt ends there, to be sent again at
// once, rather than waiting out its timeout.
func TestAttemptEndsAtAnElection(t *testing.T) {
	r := &Requester{AttemptTimeout: time.Hour}
	started := make(chan struct{})
	go func() {
		<-started
		r.Interrupts.Fire()
	}()
	done := make(chan error, 1)
	go func() {
		done <- r.attempt(context.Background(), func(ctx context.Context) error {
			close(started)
			<-ctx.Done() // unanswered: nobody led when it was sent
			return ctx.Err()
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrMoved) {
			t.Fatalf("attempt cut short by an election: %v, want ErrMoved (sent again at once)", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the attempt outlived the election")
	}
}
