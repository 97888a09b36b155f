package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/internal/lincheck"
	"github.com/agentcore/sessionlog/service/servicetest"
)

// linWorkload is clients of the service, one entering through each node,
// appending (under the leaf, and conditionally on the sequence they last
// saw) and reading a few sessions; every call is recorded for the
// linearizability checker.
type linWorkload struct {
	h        *lincheck.History
	sessions []string
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu            sync.Mutex
	readers       int          // started by reader, numbered from 101 in the history
	minorityReads atomic.Int64 // of theirs, answered
}

func startLinWorkload(t *testing.T, urls []string, sessions []string) *linWorkload {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &linWorkload{h: lincheck.NewHistory(), sessions: sessions, cancel: cancel}
	create := func(c *api.Client) {
		for _, s := range sessions {
			sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
			var err error
			// "unavailable" is for asking again (a node between meta
			// leaders at the start, say).
			for err = c.Call(sctx, api.OpCreate, api.CreateRequest{ID: s}, nil); isUnavailable(err) && sctx.Err() == nil; err = c.Call(sctx, api.OpCreate, api.CreateRequest{ID: s}, nil) {
				time.Sleep(100 * time.Millisecond)
			}
			scancel()
			if err != nil && !strings.Contains(err.Error(), "exists") {
				t.Fatalf("lin session %s: %v", s, err)
			}
		}
	}
	for i := range urls {
		// Each client starts at another node; on a fault it moves on.
		order := append(append([]string{}, urls[i:]...), urls[:i]...)
		nc, err := nats.Connect(strings.Join(order, ","), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.DontRandomize())
		if err != nil {
			t.Fatal(err)
		}
		c := api.NewClient(nc, "sessionlog.v1")
		if i == 0 {
			create(c)
		}
		lc := &servicetest.LinClient{C: c, H: w.h, ID: i}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer nc.Close()
			var last uint64
			for n := 0; ctx.Err() == nil; n++ {
				s := sessions[n%len(sessions)]
				switch n % 3 {
				case 0:
					lc.Read(ctx, s)
				case 1:
					if out := lc.Append(ctx, s, fmt.Sprintf("lin-c%d-%d", i, n), 0); !out.Unknown {
						last = out.Sequence
					}
				default:
					if out := lc.Append(ctx, s, fmt.Sprintf("lin-c%d-%d", i, n), last); !out.Unknown {
						last = out.Sequence
					}
				}
				// A steady pace keeps the history checkable (a few
				// thousand operations) however long the run.
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
	return w
}

// reader starts one more client, on the server at url alone, that only
// reads the sessions until stopped; its calls go in the same history.
func (w *linWorkload) reader(url string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := nats.Connect(url, nats.MaxReconnects(0))
		if err != nil {
			return
		}
		defer nc.Close()
		w.mu.Lock()
		w.readers++
		id := 100 + w.readers
		w.mu.Unlock()
		lc := &servicetest.LinClient{C: api.NewClient(nc, "sessionlog.v1"), H: w.h, ID: id, Timeout: time.Second}
		for n := 0; ctx.Err() == nil; n++ {
			if out := lc.Read(ctx, w.sessions[n%len(w.sessions)]); !out.Unknown {
				w.minorityReads.Add(1)
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// stop ends the clients and checks what they recorded.
func (w *linWorkload) stop(t *testing.T) string {
	w.cancel()
	w.wg.Wait()
	res := w.h.Check(time.Minute)
	msg := fmt.Sprintf("linearizability: %d service operations on %d sessions through every node (%d reads answered through a cut-off node): %s", w.h.Len(), len(w.sessions), w.minorityReads.Load(), res)
	switch res {
	case "Ok":
	case "Illegal":
		t.Errorf("%s\n%s", msg, w.h.Explain(time.Minute))
	default:
		t.Errorf("%s: the checker could not decide in a minute", msg)
	}
	return msg
}

// isUnavailable says whether err is the service's "unavailable".
func isUnavailable(err error) bool {
	var se *api.Error
	return errors.As(err, &se) && se.Code == api.CodeUnavailable
}
