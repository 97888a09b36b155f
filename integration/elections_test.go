package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// elections records when the sessions stream elected a leader, from the
// server's own advisories, so that a leader fault's write gap can be set
// against the election it waited for. It listens on every node, each
// through its own connection: a node cut off from the others hears
// nothing of the election they hold.
type elections struct {
	conns []*nats.Conn
	mu    sync.Mutex
	at    []time.Time
}

func watchElections(t *testing.T, urls []string) *elections {
	t.Helper()
	e := &elections{}
	for _, url := range urls {
		nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		e.conns = append(e.conns, nc)
		if _, err := nc.Subscribe("$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."+targetStream(), func(*nats.Msg) {
			e.mu.Lock()
			e.at = append(e.at, time.Now())
			e.mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// after is how long after since the first election was, if one was seen
// within limit.
func (e *elections) after(since time.Time, limit time.Duration) (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, at := range e.at { // in order of arrival; the first seen is the earliest
		if at.After(since) && at.Sub(since) <= limit {
			return at.Sub(since), true
		}
	}
	return 0, false
}

func (e *elections) close() {
	for _, nc := range e.conns {
		nc.Close()
	}
}

// gapReport is p50, p99 and max of the write gaps per fault kind, over
// every round of the run.
func gapReport(gaps map[string][]time.Duration, order []string) string {
	var b strings.Builder
	for _, name := range order {
		ds := slices.Clone(gaps[name])
		if len(ds) == 0 {
			continue
		}
		q := func(p float64) time.Duration { return quantile(ds, p).Round(time.Millisecond) }
		fmt.Fprintf(&b, "  %-60s %3d× gap p50 %-8v p99 %-8v max %v\n", name, len(ds), q(0.5), q(0.99), quantile(ds, 1).Round(time.Millisecond))
	}
	return b.String()
}

// goalReport says, per fault kind, whether the write gaps met their goal:
// a fault of a node leading nothing the sessions need costs at most a
// second; a leader's, at most its elections' p99 and a second. It is a
// report, not a check: timings are not asserted in tests.
func goalReport(gaps, elections map[string][]time.Duration, order []string) string {
	p99 := func(ds []time.Duration) time.Duration { return quantile(ds, 0.99) }
	// A leader fault whose election the advisories missed is held to the
	// elections seen in the rest of the run.
	var all []time.Duration
	for _, el := range elections {
		all = append(all, el...)
	}
	var b strings.Builder
	for _, name := range order {
		goal, basis := time.Second, "1s"
		if el := elections[name]; strings.Contains(name, "leader") && len(el) > 0 {
			goal, basis = p99(el)+time.Second, "election p99 + 1s"
		} else if strings.Contains(name, "leader") && len(all) > 0 {
			goal, basis = p99(all)+time.Second, "the run's election p99 + 1s: none seen for this fault"
		}
		got := p99(gaps[name])
		verdict := "met"
		if got > goal {
			verdict = "MISSED"
		}
		fmt.Fprintf(&b, "  %-60s gap p99 %-8v goal %-8v (%s): %s\n", name, got.Round(time.Millisecond), goal.Round(time.Millisecond), basis, verdict)
	}
	return b.String()
}

// quantile is the nearest-rank p-quantile of ds (p = 1: the maximum), the
// one way every figure of the report is taken.
func quantile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// leaderMoved polls, through the nodes other than old, until the target
// stream names a leader other than old, and reports when that was,
// measured from the first fault mark (closed marked). The advisories
// miss some elections (a cut-off round heard none in two of three); the
// stream's own answer does not.
func leaderMoved(ctx context.Context, c *procCluster, old int, marked <-chan time.Time) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		defer close(out)
		var start time.Time
		select {
		case start = <-marked:
		case <-ctx.Done():
			return
		}
		deadline := start.Add(30 * time.Second)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			// Each ask short: while nobody leads, nobody answers.
			pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			l, _, err := c.streamPeersVia(pctx, c.urlsBut(old))
			cancel()
			if err == nil && l != old {
				out <- time.Since(start)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return out
}
