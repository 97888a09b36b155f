package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
)

// Writers keep the index in the background (indexer), which leaves two
// holes: a writer that dies before its record is written, and a process
// that writes to the stream without this package (an older version, a
// client of another language publishing itself). The index follower
// closes them from the stream's side: a durable consumer per partition,
// shared by every node that runs one, hands it each message once it has
// settled (writers have had their turn), and it checks the session's
// record against the message's sequence — one read, nearly always enough
// — rebuilding the record from the session only when the record is
// behind. Messages are acknowledged once their sessions' records are
// right, so a follower that dies leaves them to another, or to itself
// when it is back: at least once, and writing a record twice changes
// nothing (a record never replaces one of a higher sequence).

// WithIndexFollower makes the backend follow its partitions and bring
// index records the writers left behind up to date (see above). Serving
// nodes set it.
func WithIndexFollower() Option { return func(b *Backend) { b.followIndex = true } }

// indexConsumer is the durable consumer every follower of a partition
// shares.
const indexConsumer = "sessionlog-index"

// indexSettle is how long a message is left to its writer's own indexer
// (which writes at most every indexInterval, resending for up to an
// attempt) before the follower looks.
func (c Config) indexSettle() time.Duration { return 2*c.indexInterval() + c.AttemptTimeout }

// indexFollower runs one loop per partition.
type indexFollower struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// repaired counts the records it had to write (tests, status).
	mu       sync.Mutex
	repaired int
	lastErr  error
}

func (b *Backend) startIndexFollower() *indexFollower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &indexFollower{cancel: cancel}
	for _, p := range b.parts {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.follow(ctx, p)
		}()
	}
	return f
}

// close stops the loops and waits for them. Idempotent.
func (f *indexFollower) close() {
	f.cancel()
	f.wg.Wait()
}

func (f *indexFollower) fail(err error) {
	f.mu.Lock()
	f.lastErr = err
	f.mu.Unlock()
}

// follow runs partition p's loop until ctx ends: the consumer is made (or
// found) first, again after any failure, waiting a little between tries
// (a meta leader being elected answers nothing).
func (f *indexFollower) follow(ctx context.Context, p *Backend) {
	for pause := 100 * time.Millisecond; ctx.Err() == nil; pause = min(2*pause, 5*time.Second) {
		cctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
		cons, err := p.stream.CreateOrUpdateConsumer(cctx, jetstream.ConsumerConfig{
			Durable:       indexConsumer,
			Description:   "sessionlog: index records the writers left behind",
			FilterSubject: p.cfg.Prefix + ".>",
			AckPolicy:     jetstream.AckExplicitPolicy,
			// What was written before the first follower started was
			// indexed by its writers, as ever.
			DeliverPolicy: jetstream.DeliverNewPolicy,
			AckWait:       time.Minute,
			MaxAckPending: 10_000,
			// Subjects and sequences are all it reads: a batch of a
			// fork's or an import's entries was 256 of them whole.
			HeadersOnly: true,
		})
		cancel()
		if err == nil {
			pause = 100 * time.Millisecond
			err = f.drain(ctx, p, cons)
		}
		if ctx.Err() != nil {
			return
		}
		f.fail(fmt.Errorf("stream: index follower of %s: %w", p.cfg.Stream, err))
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// drain takes batches from cons until ctx ends or a fetch fails.
func (f *indexFollower) drain(ctx context.Context, p *Backend, cons jetstream.Consumer) error {
	for ctx.Err() == nil {
		// A second's wait at most, and none past ctx.
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		batch, err := cons.Fetch(256, jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			return err
		}
		var msgs []jetstream.Msg
		for m := range batch.Messages() {
			msgs = append(msgs, m)
		}
		cancel()
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) &&
			!errors.Is(err, context.DeadlineExceeded) && len(msgs) == 0 {
			return err
		}
		if len(msgs) == 0 {
			continue
		}
		f.handle(ctx, p, msgs)
	}
	return ctx.Err()
}

// handle brings the records of the sessions msgs belong to up to their
// sequences, once the newest of them has settled, and acknowledges each
// message whose session's record is right (the others come again).
func (f *indexFollower) handle(ctx context.Context, p *Backend, msgs []jetstream.Msg) {
	newest := time.Time{}
	upTo := map[string]uint64{} // session -> the last sequence seen
	bySession := map[string][]jetstream.Msg{}
	for _, m := range msgs {
		meta, err := m.Metadata()
		id, _, ok := p.cfg.sessionOf(m.Subject())
		if err != nil || !ok || session.ValidateSessionID(id) != nil {
			_ = m.Ack() // a read barrier, or nothing of a session
			continue
		}
		if meta.Timestamp.After(newest) {
			newest = meta.Timestamp
		}
		upTo[id] = max(upTo[id], meta.Sequence.Stream)
		bySession[id] = append(bySession[id], m)
	}
	if wait := time.Until(newest.Add(p.cfg.indexSettle())); wait > 0 {
		select {
		case <-ctx.Done():
			return // unacknowledged: delivered again
		case <-time.After(wait):
		}
	}
	for id, seq := range upTo {
		err := f.indexUpTo(ctx, p, id, seq)
		for _, m := range bySession[id] {
			if err == nil {
				_ = m.Ack()
			} else {
				_ = m.NakWithDelay(p.cfg.indexSettle())
			}
		}
		if err != nil {
			f.fail(fmt.Errorf("stream: index %s: %w", id, err))
		}
	}
}

// indexUpTo makes session id's record cover sequence seq: nothing to do
// when it does (its writer indexed it); else the record is rebuilt from
// the session as the stream holds it now.
func (f *indexFollower) indexUpTo(ctx context.Context, p *Backend, id string, seq uint64) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	if e, err := p.kv.Get(ctx, id); err == nil {
		var rec indexRecord
		if json.Unmarshal(e.Value(), &rec) == nil && (rec.Seq >= seq || rec.newer()) {
			return nil // current, or a later release's: not ours to rewrite
		}
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted) {
		return err
	}
	st, err := p.OpenStore(ctx, id)
	if errors.Is(err, session.ErrSessionNotFound) {
		return nil // deleted since: nothing to list
	}
	if err != nil {
		return err
	}
	// The store's own indexer writes the record, on Close: once, even
	// when the catch-up below has asked it to already.
	err = st.CatchUp(ctx)
	if err == nil {
		err = st.ReadStateAt(ctx, func(t *session.Tree, last uint64) error {
			st.idx.touch(t.Info(), last)
			return nil
		})
	}
	if cerr := st.Close(ctx); err == nil {
		err = cerr
	}
	if errors.Is(err, session.ErrSessionNotFound) {
		return nil // deleted since: nothing to list
	}
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.repaired++
	f.mu.Unlock()
	return nil
}

// IndexRepairs is how many index records this backend's follower had to
// write because their writers had not, and its last error (nil: none, or
// no follower).
func (b *Backend) IndexRepairs() (int, error) {
	if b.indexFollower == nil {
		return 0, nil
	}
	b.indexFollower.mu.Lock()
	defer b.indexFollower.mu.Unlock()
	return b.indexFollower.repaired, b.indexFollower.lastErr
}
