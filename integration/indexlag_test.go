package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// indexProbe measures how far listings lag behind writes: it appends to a
// session of the faulted partition every interval and times, for each
// acknowledged append, how long until the session's index record (what
// a listing shows) names it as the leaf.
type indexProbe struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	lags []probeLag
	errs int
}

type probeLag struct {
	acked time.Time
	lag   time.Duration
}

// indexProbeSession is a session id of the target partition.
func indexProbeSession() string {
	for i := 0; ; i++ {
		if id := fmt.Sprintf("itest-index-%d", i); stream.PartitionOf(id, partitions) == targetPartition {
			return id
		}
	}
}

func startIndexProbe(t *testing.T, urls string) *indexProbe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &indexProbe{cancel: cancel}
	sid := indexProbeSession()
	createSessions(t, ctx, urls, []string{sid})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.run(ctx, strings.Split(urls, ","), sid)
	}()
	return p
}

func (p *indexProbe) run(ctx context.Context, servers []string, sid string) {
	nc, b, err := dial(ctx, servers, 0)
	if err != nil {
		p.fail()
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, layout().StreamOf(sid)+"_INDEX")
	if err != nil {
		p.fail()
		return
	}
	var st *stream.Store
	defer func() {
		if st != nil {
			st.Close(context.Background())
		}
	}()
	for n := 0; ctx.Err() == nil; n++ {
		pause(ctx, 200*time.Millisecond)
		if st == nil {
			if st, err = b.OpenStore(ctx, sid); err != nil {
				st = nil
				p.fail()
				continue
			}
		}
		leaf, _ := st.Leaf(ctx)
		id := fmt.Sprintf("probe-%06d", n)
		e := &session.Entry{Type: session.TypeCustom, ID: id, ParentID: leaf, Timestamp: session.FormatTime(time.Now()), Body: &session.Custom{CustomType: "probe"}}
		if err := st.Append(ctx, e); err != nil {
			st.Close(context.Background())
			st = nil
			p.fail()
			continue
		}
		acked := time.Now()
		for ctx.Err() == nil {
			if rec, err := kv.Get(ctx, sid); err == nil {
				var info session.Listing
				if json.Unmarshal(rec.Value(), &info) == nil && info.Leaf == id {
					p.mu.Lock()
					p.lags = append(p.lags, probeLag{acked, time.Since(acked)})
					p.mu.Unlock()
					break
				}
			}
			pause(ctx, 10*time.Millisecond)
		}
	}
}

func (p *indexProbe) fail() {
	p.mu.Lock()
	p.errs++
	p.mu.Unlock()
}

// between is the lags of appends acknowledged in [from, to).
func (p *indexProbe) between(from, to time.Time) []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Duration
	for _, l := range p.lags {
		if !l.acked.Before(from) && l.acked.Before(to) {
			out = append(out, l.lag)
		}
	}
	return out
}

// all is every lag measured.
func (p *indexProbe) all() []time.Duration {
	return p.between(time.Time{}, time.Now().Add(time.Hour))
}

func (p *indexProbe) stop() {
	p.cancel()
	p.wg.Wait()
}

// quantiles formats p50, p99 and max of ds.
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none measured"
	}
	q := func(p float64) time.Duration { return quantile(ds, p).Round(time.Millisecond) }
	return fmt.Sprintf("p50 %v p99 %v max %v (%d)", q(0.5), q(0.99), q(1), len(ds))
}
