package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/stream"
)

// Tenant users may create consumers (replicas, event consumers, event
// streams read them), and every consumer of a stream counts against one
// limit of the account — the one the service's own reads need. So that
// no user can exhaust it, the service counts the consumers each user
// creates on its streams, as the server reports them (the JetStream API
// audit advisory names the client of each request), and deletes any past
// Config.MaxConsumersPerUser at once. The service's own connections
// (Config.Owners) are not counted. Consumers made while no service ran
// are not known, so not counted: the bound holds for what is created
// under it.

// quotaAudit is what the server says of a JetStream API request.
type quotaAudit struct {
	Client struct {
		User string `json:"user"`
	} `json:"client"`
	Subject  string `json:"subject"`
	Response string `json:"response"`
}

// consumerQuota is the running count.
type consumerQuota struct {
	b      *stream.Backend
	max    int
	owners map[string]bool
	del    chan [2]string // stream, consumer to delete
	subs   []*nats.Subscription

	mu sync.Mutex
	// live is the generations' stream, maxLive its bound.
	live    string
	maxLive int
	byUser  map[string][]string // user and count → "stream/consumer", oldest first
	owner   map[string]string   // "stream/consumer" → user and count
}

// startQuota subscribes to the advisories on the backend's connection;
// the deleting goroutine belongs to s.
func (s *Service) startQuota() error {
	if s.cfg.MaxConsumersPerUser == 0 || len(s.cfg.Owners) == 0 {
		return nil // without owners (no tenants) every client looks alike
	}
	q := &consumerQuota{b: s.b, max: s.cfg.MaxConsumersPerUser, live: s.live.Config().Stream, maxLive: s.cfg.MaxLiveConsumersPerUser, owners: map[string]bool{},
		del: make(chan [2]string, 256), byUser: map[string][]string{}, owner: map[string]string{}}
	for _, o := range s.cfg.Owners {
		q.owners[o] = true
	}
	nc := s.b.Conn()
	for subj, fn := range map[string]nats.MsgHandler{
		"$JS.EVENT.ADVISORY.API":                q.audited,
		"$JS.EVENT.ADVISORY.CONSUMER.DELETED.>": q.gone,
	} {
		sub, err := nc.Subscribe(subj, fn)
		if err != nil {
			q.stop()
			return fmt.Errorf("service: consumer quota: %w", err)
		}
		q.subs = append(q.subs, sub)
	}
	s.quota = q
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.stopping:
				return
			case d := <-q.del:
				ctx, cancel := context.WithTimeout(s.ctx, s.cfg.RequestTimeout)
				_ = q.b.JetStream().DeleteConsumer(ctx, d[0], d[1]) // best effort; one already gone is as good
				cancel()
			}
		}
	}()
	return nil
}

func (q *consumerQuota) stop() {
	for _, sub := range q.subs {
		_ = sub.Unsubscribe()
	}
}

// bound is the count a consumer of a stream goes in, and that count's
// bound (0: not counted): the partitions' streams and the dead letters'
// share one; the generations' (a reader and a writer's stop watch each
// for as long as a generation is read) have their own.
func (q *consumerQuota) bound(streamName string) (count string, max int) {
	cfg := q.b.Config()
	switch {
	case slices.Contains(cfg.Streams(), streamName) || streamName == cfg.Stream+"_DLQ":
		return "sessions", q.max
	case streamName == q.live:
		return "live", q.maxLive
	}
	return "", 0
}

func (q *consumerQuota) audited(m *nats.Msg) {
	if !bytes.Contains(m.Data, []byte(`CONSUMER.CREATE.`)) && !bytes.Contains(m.Data, []byte(`CONSUMER.DURABLE.CREATE.`)) {
		return // most audits are of other requests: not decoded
	}
	var a quotaAudit
	if json.Unmarshal(m.Data, &a) != nil || q.owners[a.Client.User] {
		return
	}
	rest, ok := strings.CutPrefix(a.Subject, "$JS.API.CONSUMER.CREATE.")
	if !ok {
		if rest, ok = strings.CutPrefix(a.Subject, "$JS.API.CONSUMER.DURABLE.CREATE."); !ok {
			return
		}
	}
	streamName, _, _ := strings.Cut(rest, ".")
	count, limit := q.bound(streamName)
	if limit == 0 {
		return
	}
	var resp struct {
		Name  string          `json:"name"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal([]byte(a.Response), &resp) != nil || resp.Error != nil || resp.Name == "" {
		return
	}
	key := streamName + "/" + resp.Name
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, known := q.owner[key]; known {
		return // an update, or the same consumer created again
	}
	bucket := a.Client.User + "\x00" + count
	if len(q.byUser[bucket]) >= limit {
		select {
		case q.del <- [2]string{streamName, resp.Name}:
		default: // deletions are behind: the next advisory tries again
		}
		return
	}
	q.owner[key] = bucket
	q.byUser[bucket] = append(q.byUser[bucket], key)
}

// gone forgets a deleted consumer ($JS.EVENT.ADVISORY.CONSUMER.DELETED.<stream>.<consumer>).
func (q *consumerQuota) gone(m *nats.Msg) {
	toks := strings.Split(m.Subject, ".")
	if len(toks) < 7 {
		return
	}
	key := toks[5] + "/" + strings.Join(toks[6:], ".")
	q.mu.Lock()
	defer q.mu.Unlock()
	user, ok := q.owner[key]
	if !ok {
		return
	}
	delete(q.owner, key)
	list := q.byUser[user]
	for i, k := range list {
		if k == key {
			q.byUser[user] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(q.byUser[user]) == 0 {
		delete(q.byUser, user)
	}
}
