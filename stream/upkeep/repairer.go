package upkeep

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentcore/sessionlog/telemetry"
)

// Repair is one repair made (or tried) by a Repairer.
type Repair struct {
	At     time.Time `json:"at"`
	Stream string    `json:"stream"`
	Peer   string    `json:"peer"`
	Action string    `json:"action"` // "stepdown" or "peer-remove"
	Reason string    `json:"reason"`
	Err    string    `json:"error,omitempty"` // refused or failed
}

// maxRepairs bounds the repairs Repairs remembers.
const maxRepairs = 100

// Repairer runs the planner over every stream each RepairConfig.Every.
type Repairer struct {
	d       Deployment
	cfg     RepairConfig
	planner *repairPlanner
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu   sync.Mutex
	done []Repair
}

// StartRepairer starts watching and repairing the replicas of d's
// streams. Close it.
func StartRepairer(d Deployment, cfg RepairConfig) (*Repairer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Repairer{d: d, cfg: cfg, planner: newRepairPlanner(cfg), cancel: cancel}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(cfg.Every)
		defer t.Stop()
		for {
			r.round(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return r, nil
}

// Close stops the watch and waits for a repair under way. Idempotent.
func (r *Repairer) Close() {
	r.cancel()
	r.wg.Wait()
}

// round looks at every stream once and makes the repairs due on those
// this server leads.
func (r *Repairer) round(ctx context.Context) {
	me := r.d.NC.ConnectedServerName()
	for _, name := range r.d.Streams {
		if ctx.Err() != nil {
			return
		}
		v, ok := r.view(ctx, name)
		if !ok {
			continue // electing, or not clustered: nothing to judge
		}
		for _, a := range r.planner.observe(sinceStart(), v) {
			if v.leader == me {
				r.repair(ctx, a)
			}
		}
	}
}

// view asks the stream's leader about its replicas.
func (r *Repairer) view(ctx context.Context, name string) (streamView, bool) {
	actx, cancel := context.WithTimeout(ctx, r.d.AttemptTimeout)
	defer cancel()
	s, err := r.d.JS.Stream(actx, name)
	if err != nil {
		return streamView{}, false
	}
	info := s.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return streamView{}, false
	}
	v := streamView{stream: name, leader: info.Cluster.Leader, lastSeq: info.State.LastSeq}
	for _, p := range info.Cluster.Replicas {
		v.peers = append(v.peers, peerView{name: p.Name, current: p.Current, offline: p.Offline, lag: p.Lag})
	}
	return v, true
}

// repair makes one repair, logs and counts it.
func (r *Repairer) repair(ctx context.Context, a repairAction) {
	var err error
	switch a.kind {
	case repairStepDown:
		err = r.api(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+a.stream, stepDownTo(a.to))
	case repairPeerRemove:
		err = r.api(ctx, "$JS.API.STREAM.PEER.REMOVE."+a.stream, map[string]string{"peer": a.peer})
	}
	rec := Repair{At: time.Now(), Stream: a.stream, Peer: a.peer, Action: a.kind, Reason: a.reason}
	outcome := "ok"
	if err != nil {
		rec.Err, outcome = err.Error(), "refused"
	}
	r.mu.Lock()
	if len(r.done) == maxRepairs {
		r.done = r.done[1:]
	}
	r.done = append(r.done, rec)
	r.mu.Unlock()
	r.d.Tel.ReplicaRepairs.Add(ctx, 1, metric.WithAttributes(telemetry.StreamKey.String(a.stream),
		attribute.String("action", a.kind), telemetry.OutcomeKey.String(outcome)))
	if r.cfg.Log != nil {
		if err != nil {
			r.cfg.Log("sessionlog: replica of %s on %s: %s; %s refused: %v", a.stream, a.peer, a.reason, a.kind, err)
		} else {
			r.cfg.Log("sessionlog: replica of %s on %s: %s; repaired by %s", a.stream, a.peer, a.reason, a.kind)
		}
	}
}

// api sends a JetStream API request, bounded by RequestTimeout.
func (r *Repairer) api(ctx context.Context, subject string, req any) error {
	rctx, cancel := context.WithTimeout(ctx, r.d.RequestTimeout)
	defer cancel()
	return api(rctx, r.d.NC, subject, req)
}

// Repairs are the replica repairs r made, oldest first (at most the last
// 100).
func (r *Repairer) Repairs() []Repair {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Repair(nil), r.done...)
}
