package gateway

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/api"
)

// streamCounts bounds the event streams open: in all, per tenant and per
// user, so that one tenant (or one user) cannot take everyone's share.
type streamCounts struct {
	max, perTenant, perUser int

	mu       sync.Mutex
	total    int
	byTenant map[string]int
	byUser   map[string]int
}

func newStreamCounts(cfg Config) *streamCounts {
	return &streamCounts{max: cfg.MaxStreams, perTenant: cfg.MaxStreamsPerTenant, perUser: cfg.MaxStreamsPerUser,
		byTenant: map[string]int{}, byUser: map[string]int{}}
}

// acquire counts one more stream of tenant and user, or says which bound
// it would pass; done uncounts it.
func (c *streamCounts) acquire(tenant, user string) (done func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.byUser[user] >= c.perUser:
		return nil, &api.Error{Code: api.CodeRateLimited, RetryAfterMs: 1000,
			Message: fmt.Sprintf("%d event streams open for this user: the limit", c.byUser[user])}
	case c.byTenant[tenant] >= c.perTenant:
		return nil, &api.Error{Code: api.CodeRateLimited, RetryAfterMs: 1000,
			Message: fmt.Sprintf("%d event streams open for this tenant: the limit", c.byTenant[tenant])}
	case c.total >= c.max:
		return nil, &api.Error{Code: api.CodeUnavailable, Message: fmt.Sprintf("%d event streams open: the gateway's limit", c.total)}
	}
	c.total++
	c.byTenant[tenant]++
	c.byUser[user]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.total--
		if c.byTenant[tenant]--; c.byTenant[tenant] == 0 {
			delete(c.byTenant, tenant)
		}
		if c.byUser[user]--; c.byUser[user] == 0 {
			delete(c.byUser, user)
		}
	}, nil
}

// open reports the streams open now, in all.
func (c *streamCounts) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// eventQueue holds the messages of one event stream until its client
// takes them, up to a number of bytes: past that the client is too slow,
// and the queue drops everything and says so once (overflowed). The
// consumer's callback never blocks on it, so nothing piles up elsewhere.
type eventQueue struct {
	limit int
	ready chan struct{} // signalled when something was pushed

	mu         sync.Mutex
	msgs       []jetstream.Msg
	bytes      int
	overflowed bool
}

func newEventQueue(limit int) *eventQueue {
	return &eventQueue{limit: limit, ready: make(chan struct{}, 1)}
}

func (q *eventQueue) push(m jetstream.Msg) {
	q.mu.Lock()
	switch {
	case q.overflowed:
	case len(q.msgs) > 0 && q.bytes+len(m.Data()) > q.limit:
		q.overflowed, q.msgs, q.bytes = true, nil, 0
	default:
		q.msgs = append(q.msgs, m)
		q.bytes += len(m.Data())
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take returns what is queued, and whether the client fell too far
// behind.
func (q *eventQueue) take() ([]jetstream.Msg, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	msgs := q.msgs
	q.msgs, q.bytes = nil, 0
	return msgs, q.overflowed
}
