package main

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/upkeep"
	"github.com/agentcore/sessionlog/telemetry"
)

// healthEvery bounds how often a scrape asks JetStream for the health of
// the deployment: scrapes in between are answered from the last report.
const healthEvery = 5 * time.Second

// healthMetrics observes each backend's health report (stream.Backend.
// Health) as the telemetry's health gauges, at scrape time.
type healthMetrics struct {
	backends []*stream.Backend
	mu       sync.Mutex
	at       time.Time
	reports  []upkeep.Health
}

// registerHealth makes the health gauges observe backends; the returned
// function unregisters them.
func registerHealth(tel *telemetry.T, backends []*stream.Backend) (func(), error) {
	hm := &healthMetrics{backends: backends}
	reg, err := tel.Meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		for _, h := range hm.read(ctx) {
			hm.observe(o, tel, h)
		}
		return nil
	}, tel.StreamMessages, tel.StreamBytes, tel.StreamLeader, tel.StreamFollowers, tel.FollowerLag,
		tel.ConsumerPending, tel.AccountStore, tel.AccountStoreLimit, tel.Warnings)
	if err != nil {
		return nil, err
	}
	return func() { _ = reg.Unregister() }, nil
}

// read returns the reports, asked again when the last are older than
// healthEvery. A backend that cannot answer now (an election) keeps its
// last report.
func (hm *healthMetrics) read(ctx context.Context) []upkeep.Health {
	hm.mu.Lock()
	defer hm.mu.Unlock()
	if time.Since(hm.at) < healthEvery && hm.reports != nil {
		return hm.reports
	}
	reports := make([]upkeep.Health, len(hm.backends))
	for i, b := range hm.backends {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		h, err := b.Health(actx)
		cancel()
		if err != nil && i < len(hm.reports) {
			h = hm.reports[i]
		}
		reports[i] = h
	}
	hm.reports, hm.at = reports, time.Now()
	return reports
}

func (hm *healthMetrics) observe(o metric.Observer, tel *telemetry.T, h upkeep.Health) {
	for _, s := range h.Streams {
		st := telemetry.StreamKey.String(s.Name)
		at := metric.WithAttributes(st)
		o.ObserveInt64(tel.StreamMessages, int64(s.Messages), at)
		o.ObserveInt64(tel.StreamBytes, int64(s.Bytes), at)
		leader := int64(1)
		if s.Clustered && s.Leader == "" {
			leader = 0
		}
		o.ObserveInt64(tel.StreamLeader, leader, at)
		counts := map[string]int64{"current": 0, "behind": 0, "offline": 0}
		var lag uint64
		for _, r := range s.Replicas {
			switch {
			case r.Offline:
				counts["offline"]++
			case !r.Current:
				counts["behind"]++
			default:
				counts["current"]++
			}
			lag = max(lag, r.Lag)
		}
		for state, n := range counts {
			o.ObserveInt64(tel.StreamFollowers, n, metric.WithAttributes(st, telemetry.StateKey.String(state)))
		}
		o.ObserveInt64(tel.FollowerLag, int64(lag), at)
		for _, c := range s.Consumers {
			if c.Durable { // ephemeral consumers come and go: their names would grow the series without bound
				o.ObserveInt64(tel.ConsumerPending, int64(c.Pending), metric.WithAttributes(st, telemetry.ConsumerKey.String(c.Name)))
			}
		}
	}
	o.ObserveInt64(tel.AccountStore, int64(h.Account.Store))
	o.ObserveInt64(tel.AccountStoreLimit, max(h.Account.StoreLimit, 0))
	o.ObserveInt64(tel.Warnings, int64(len(h.Warnings)))
}

// registerDisk makes the disk gauges observe the file system the node
// stores its data on; the returned function unregisters them.
func registerDisk(tel *telemetry.T, node *cluster.Node) (func(), error) {
	reg, err := tel.Meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if free, size, ok := node.DiskSpace(); ok {
			o.ObserveInt64(tel.DiskFree, int64(free))
			o.ObserveInt64(tel.DiskSize, int64(size))
		}
		return nil
	}, tel.DiskFree, tel.DiskSize)
	if err != nil {
		return nil, err
	}
	return func() { _ = reg.Unregister() }, nil
}
