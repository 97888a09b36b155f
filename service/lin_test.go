package service_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/internal/lincheck"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/service/servicetest"
)

// Reads are linearizable: with writers on one instance of the service and
// readers on another (each with its own cache), the recorded history of
// every session checks out — and the same workload against a read path
// that skips the freshness check is caught.
func TestReadsAreLinearizable(t *testing.T) {
	for _, stale := range []bool{false, true} {
		t.Run(fmt.Sprintf("stale=%v", stale), func(t *testing.T) {
			h := runLinWorkload(t, stale)
			res := h.Check(time.Minute)
			t.Logf("%d operations: %s", h.Len(), res)
			switch {
			case !stale && res != porcupine.Ok:
				t.Fatalf("the history is %s, not linearizable", res)
			case stale && res != porcupine.Illegal:
				t.Fatalf("a read path that skips the freshness check was not caught: %s", res)
			}
		})
	}
}

// runLinWorkload runs two writers (appends under the leaf, and
// conditional ones from their last answer) against instance A and two
// readers against instance B, on two sessions, for a second.
func runLinWorkload(t *testing.T, stale bool) *lincheck.History {
	b := servicetest.Backend(t, nc)
	_, cfgA := servicetest.Start(t, nc, b, unlimited)
	nb := newConn(t)
	svcB, cfgB := servicetest.Start(t, nb, b, unlimited)
	service.SetStaleReads(svcB, stale)
	a := api.NewClient(nc, cfgA.Subject)
	r := api.NewClient(nb, cfgB.Subject)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sessions := []string{"lin0", "lin1"}
	for _, s := range sessions {
		if err := a.Call(ctx, api.OpCreate, api.CreateRequest{ID: s}, nil); err != nil {
			t.Fatal(err)
		}
	}
	h := lincheck.NewHistory()
	stop := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lc := &servicetest.LinClient{C: a, H: h, ID: w}
			var last uint64
			for i := 0; time.Now().Before(stop); i++ {
				s := sessions[i%len(sessions)]
				if i%3 == 2 && last != 0 {
					out := lc.Append(ctx, s, fmt.Sprintf("w%d-%d", w, i), last)
					if !out.Unknown {
						last = out.Sequence
					}
					continue
				}
				out := lc.Append(ctx, s, fmt.Sprintf("w%d-%d", w, i), 0)
				if !out.Unknown {
					last = out.Sequence
				}
			}
		}()
	}
	for rd := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lc := &servicetest.LinClient{C: r, H: h, ID: 2 + rd}
			for i := 0; time.Now().Before(stop); i++ {
				lc.Read(ctx, sessions[i%len(sessions)])
			}
		}()
	}
	wg.Wait()
	return h
}
