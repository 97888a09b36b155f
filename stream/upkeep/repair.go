package upkeep

import (
	"errors"
	"fmt"
	"time"
)

// Repairing replicas: nats-server brings a lagging replica back by
// itself, nearly always. Nearly: a deposed leader whose log diverged can
// stay behind for good ("Expected first catchup entry to be a snapshot
// and peerstate", seen in the five-node fault round), and a node that
// died keeps its place in every peer set it was in, leaving its streams
// one copy short for as long as it is gone. The planner below decides,
// from what the stream's leader reports of its peers, when a replica is
// no longer coming back by itself and what to do about it; repairer
// (repairer.go) observes and acts.

// started is when this process started: the planner's clock is the time
// since, monotonic.
var started = time.Now()

func sinceStart() time.Duration { return max(time.Since(started), 1) }

// ErrInvalidConfig is returned by RepairConfig.Validate.
var ErrInvalidConfig = errors.New("upkeep: invalid config")

// RepairConfig says when a replica counts as stuck or dead.
type RepairConfig struct {
	// Every is how often the streams are looked at.
	Every time.Duration
	// StuckAfter (0: never): a replica of a live server that has been behind its
	// leader this long, while the leader took new messages and the
	// replica did not come closer, is stuck. It is repaired by a change
	// of leader first (its catch-up starts over from another), and, if
	// it is still stuck a StuckAfter later, by removing it from the peer
	// set: the cluster places a fresh replica on another server, if it
	// has one.
	StuckAfter time.Duration
	// DeadAfter (0: never): a replica whose server has been offline this long is
	// removed from the peer set, so that a fresh copy is made elsewhere
	// (only a cluster with a server outside the peer set has one).
	DeadAfter time.Duration
	// Log, when set, hears of each repair.
	Log func(format string, args ...any)
}

// DefaultRepairConfig looks every 5 s, repairs a replica stuck for a
// minute and replaces one whose server has been gone for ten.
func DefaultRepairConfig() RepairConfig {
	return RepairConfig{Every: 5 * time.Second, StuckAfter: time.Minute, DeadAfter: 10 * time.Minute}
}

// Validate reports settings that cannot work.
func (c RepairConfig) Validate() error {
	switch {
	case c.Every <= 0:
		return fmt.Errorf("%w: repair: Every must be positive, not %v", ErrInvalidConfig, c.Every)
	case c.StuckAfter < 0 || (c.StuckAfter > 0 && c.StuckAfter < c.Every):
		return fmt.Errorf("%w: repair: StuckAfter (%v) must be 0 (never) or at least Every (%v)", ErrInvalidConfig, c.StuckAfter, c.Every)
	case c.DeadAfter < 0 || (c.DeadAfter > 0 && c.DeadAfter < c.Every):
		return fmt.Errorf("%w: repair: DeadAfter (%v) must be 0 (never) or at least Every (%v)", ErrInvalidConfig, c.DeadAfter, c.Every)
	}
	return nil
}

// peerView is what a stream's leader says of one of its replicas.
type peerView struct {
	name    string
	current bool
	offline bool
	lag     uint64
}

// streamView is one observation of a stream: its leader, its last
// sequence and its other replicas.
type streamView struct {
	stream  string
	leader  string
	lastSeq uint64
	peers   []peerView
}

// Repair actions.
const (
	repairStepDown   = "stepdown"
	repairPeerRemove = "peer-remove"
)

// repairAction is what the planner decides for one replica.
type repairAction struct {
	stream, peer string
	kind         string // repairStepDown or repairPeerRemove
	to           string // stepdown: the current peer to lead instead ("" any)
	reason       string
}

// behind is what the planner remembers of a replica since it fell
// behind.
type behind struct {
	since      time.Duration // when it was first seen behind
	seq        uint64        // the stream's last sequence then
	lag        uint64        // its lag then (the least since, while catching up)
	leader     string        // the leader then
	leaderMove bool          // the leader changed since: a stepdown was had
}

// repairPlanner decides repairs from successive observations. It is a
// pure state machine (times are given), so its rules are table-tested.
type repairPlanner struct {
	cfg   RepairConfig
	state map[[2]string]*behind // stream, peer
}

func newRepairPlanner(cfg RepairConfig) *repairPlanner {
	return &repairPlanner{cfg: cfg, state: map[[2]string]*behind{}}
}

// observe takes one view of a stream at now and returns the repairs due.
// Only a caller on the stream's leader acts on them; every node observes,
// so that a leader elected after a stepdown knows the replica was behind
// under its predecessor too and goes on to remove it.
func (p *repairPlanner) observe(now time.Duration, v streamView) []repairAction {
	seen := map[string]bool{}
	var out []repairAction
	for _, r := range v.peers {
		seen[r.name] = true
		key := [2]string{v.stream, r.name}
		if r.current && !r.offline && r.lag == 0 {
			delete(p.state, key)
			continue
		}
		st := p.state[key]
		if st == nil {
			p.state[key] = &behind{since: now, seq: v.lastSeq, lag: r.lag, leader: v.leader}
			continue
		}
		if v.leader != st.leader && v.leader != "" {
			st.leaderMove, st.leader = true, v.leader
		}
		if r.offline {
			if p.cfg.DeadAfter > 0 && now-st.since >= p.cfg.DeadAfter {
				out = append(out, repairAction{stream: v.stream, peer: r.name, kind: repairPeerRemove,
					reason: "its server has been offline for " + (now - st.since).Round(time.Second).String()})
				p.restart(key, now, v, r)
			}
			continue
		}
		if r.lag < st.lag {
			// Catching up: not stuck, whatever the time.
			st.since, st.seq, st.lag = now, v.lastSeq, r.lag
			continue
		}
		if p.cfg.StuckAfter == 0 || now-st.since < p.cfg.StuckAfter || v.lastSeq <= st.seq {
			continue // not long enough, or a leader with nothing new to send
		}
		reason := "behind its leader for " + (now - st.since).Round(time.Second).String() + " while the leader took new messages"
		if !st.leaderMove {
			if to := otherCurrent(v.peers, r.name); to != "" {
				out = append(out, repairAction{stream: v.stream, peer: r.name, kind: repairStepDown, to: to, reason: reason})
				p.restart(key, now, v, r)
				p.state[key].leaderMove = true
				continue
			}
		}
		out = append(out, repairAction{stream: v.stream, peer: r.name, kind: repairPeerRemove, reason: reason})
		p.restart(key, now, v, r)
	}
	// A peer no longer listed (removed, replaced) is forgotten.
	for key := range p.state {
		if key[0] == v.stream && !seen[key[1]] {
			delete(p.state, key)
		}
	}
	return out
}

// restart begins a new window for a replica just repaired.
func (p *repairPlanner) restart(key [2]string, now time.Duration, v streamView, r peerView) {
	p.state[key] = &behind{since: now, seq: v.lastSeq, lag: r.lag, leader: v.leader}
}

// otherCurrent is a current, online peer other than stuck, to lead.
func otherCurrent(peers []peerView, stuck string) string {
	for _, r := range peers {
		if r.name != stuck && r.current && !r.offline {
			return r.name
		}
	}
	return ""
}
