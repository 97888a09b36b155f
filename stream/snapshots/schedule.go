package snapshots

import (
	"context"
	"sync"
	"time"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/internal/job"
)

// Policy says when a session's snapshot is due.
type Policy struct {
	// Every is the number of entries after which a snapshot is due (0:
	// never by count).
	Every int
	// OnCompaction makes a compaction entry call for one.
	OnCompaction bool
}

// Due reports whether entries just applied, after since others, call for
// a snapshot.
func (p Policy) Due(since int, entries []*session.Entry) bool {
	if p.Every > 0 && since >= p.Every {
		return true
	}
	if p.OnCompaction {
		for _, e := range entries {
			if e.Type == session.TypeCompaction {
				return true
			}
		}
	}
	return false
}

// Scheduler is the one place that decides when snapshots are
// written, for a store (one session) and a replica (many) alike: it counts
// the entries each session applies, and when the backend's policy says a
// snapshot is due it has write called for that session in a goroutine of
// its own — one snapshot at a time, sessions that fall due again before
// theirs is written coalesce, rounds at most once a second.
type Scheduler struct {
	policy Policy
	job    *job.Job

	mu    sync.Mutex
	since map[string]int // entries applied since the last snapshot was scheduled
}

// NewScheduler returns a scheduler that calls write (bounded by timeout)
// for each session p says is due. Close it.
func NewScheduler(p Policy, timeout time.Duration, write func(ctx context.Context, id string) error) *Scheduler {
	return &Scheduler{policy: p, job: job.New(time.Second, timeout, write), since: map[string]int{}}
}

// Applied counts entries applied to session id and schedules its snapshot
// when one is due.
func (s *Scheduler) Applied(id string, entries ...*session.Entry) {
	s.mu.Lock()
	s.since[id] += len(entries)
	due := s.policy.Due(s.since[id], entries)
	if due {
		s.since[id] = 0
	}
	s.mu.Unlock()
	if due {
		s.job.Trigger(id)
	}
}

// Loaded counts the n entries a session was read with that no snapshot
// covers (all of them when it was read from the stream alone), and
// schedules a snapshot when they are as many as one is due after, or when
// stale says the snapshot it was read from should be written again (a
// format without the body's index): the next open is then cheap.
func (s *Scheduler) Loaded(id string, n int, stale bool) {
	s.mu.Lock()
	s.since[id] += n
	due := stale || (s.policy.Every > 0 && s.since[id] >= s.policy.Every)
	if due {
		s.since[id] = 0
	}
	s.mu.Unlock()
	if due {
		s.job.Trigger(id)
	}
}

// Forget drops session id's count and any snapshot of it not yet begun
// (its tree is no longer held).
func (s *Scheduler) Forget(id string) {
	s.mu.Lock()
	delete(s.since, id)
	s.mu.Unlock()
	s.job.Forget(id)
}

// Status reports how many snapshots were attempted and the last one's
// error.
func (s *Scheduler) Status() (int, error) { return s.job.Status() }

// Close lets a snapshot being written finish and stops. Idempotent.
func (s *Scheduler) Close() { s.job.Close() }
