package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// ledger is what the writers did: every entry attempted and every one
// acknowledged, by id.
type ledger struct {
	mu        sync.Mutex
	attempted map[string]string // entry id -> session
	acked     map[string]string
	ackedAt   map[string]time.Time
	sentAt    map[string]time.Time
	acks      []ackTime // the watched sessions' acknowledgements, nearly in order
	watched   []string  // the sessions whose acks time the faults (none: all)
	errors    atomic.Int64
	lastErr   atomic.Value // string
}

func (l *ledger) fail(err error) {
	l.errors.Add(1)
	l.lastErr.Store(err.Error())
}

func newLedger() *ledger {
	return &ledger{attempted: map[string]string{}, acked: map[string]string{}, ackedAt: map[string]time.Time{}, sentAt: map[string]time.Time{}}
}

func (l *ledger) attempt(id, sid string) {
	l.mu.Lock()
	l.attempted[id] = sid
	l.sentAt[id] = time.Now()
	l.mu.Unlock()
}

func (l *ledger) ack(id, sid string) { l.ackVia(id, sid, "") }

// ackVia is ack of an append made through server.
func (l *ledger) ackVia(id, sid, server string) {
	l.mu.Lock()
	l.acked[id] = sid
	now := time.Now()
	l.ackedAt[id] = now
	if len(l.watched) == 0 || slices.Contains(l.watched, sid) {
		writer, _, _ := strings.Cut(id, "-")
		l.acks = append(l.acks, ackTime{sid: sid, writer: writer, server: server, sent: l.sentAt[id], acked: now})
	}
	l.mu.Unlock()
}

// ackCount is how many appends were acknowledged so far.
func (l *ledger) ackCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// watch makes only the acknowledgements of these sessions count in
// resumedAfter and slowest.
func (l *ledger) watch(sessions []string) {
	l.mu.Lock()
	l.watched = sessions
	l.mu.Unlock()
}

// ackTime is when an acknowledged append to session sid was sent and
// acknowledged.
type ackTime struct {
	sid, writer, server string
	sent, acked         time.Time
}

// resumedDetail says, for each watched session, when its first append
// sent after since was acknowledged and by which writer: which session a
// long gap was.
func (l *ledger) resumedDetail(since time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	type first struct {
		at             time.Time
		writer, server string
	}
	bySession, byWriter := map[string]first{}, map[string]first{}
	for i := len(l.acks) - 1; i >= 0 && l.acks[i].acked.After(since.Add(-time.Second)); i-- {
		a := l.acks[i]
		if !a.sent.After(since) {
			continue
		}
		if f, ok := bySession[a.sid]; !ok || a.acked.Before(f.at) {
			bySession[a.sid] = first{a.acked, a.writer, a.server}
		}
		if f, ok := byWriter[a.writer]; !ok || a.acked.Before(f.at) {
			byWriter[a.writer] = first{a.acked, a.writer, a.server}
		}
	}
	var parts []string
	for _, sid := range l.watched {
		if f, ok := bySession[sid]; ok {
			parts = append(parts, fmt.Sprintf("%s +%v (%s via %s)", sid, f.at.Sub(since).Round(time.Millisecond), f.writer, f.server))
		}
	}
	var ws []string
	for w, f := range byWriter {
		ws = append(ws, fmt.Sprintf("%s +%v via %s", w, f.at.Sub(since).Round(time.Millisecond), f.server))
	}
	slices.Sort(ws)
	return strings.Join(parts, ", ") + "; writers' first: " + strings.Join(ws, ", ")
}

// slowest is the longest an append acknowledged between from and to took.
func (l *ledger) slowest(from, to time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d time.Duration
	for i := len(l.acks) - 1; i >= 0 && l.acks[i].acked.After(from.Add(-time.Second)); i-- {
		if a := l.acks[i]; a.acked.After(from) && a.acked.Before(to) {
			d = max(d, a.acked.Sub(a.sent))
		}
	}
	return d
}

// resumedAfter is when every watched session had an append sent after
// since acknowledged: the latest of their first such acknowledgements
// (false while one of them has none). A session's writers are stalled
// until then, whichever writer got through first.
func (l *ledger) resumedAfter(since time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Writers record concurrently, so the tail may be out of order by a
	// little: scan back from the end until well before since.
	first := map[string]time.Time{}
	for i := len(l.acks) - 1; i >= 0 && l.acks[i].acked.After(since.Add(-time.Second)); i-- {
		a := l.acks[i]
		if f, ok := first[a.sid]; a.sent.After(since) && (!ok || a.acked.Before(f)) {
			first[a.sid] = a.acked
		}
	}
	var last time.Time
	for _, sid := range l.watched {
		f, ok := first[sid]
		if !ok {
			return time.Time{}, false
		}
		if f.After(last) {
			last = f
		}
	}
	if len(l.watched) == 0 {
		for _, f := range first {
			if f.After(last) {
				last = f
			}
		}
	}
	return last, !last.IsZero()
}

// workload runs writers, each on its own connection (to every node, so it
// fails over), appending to sessions shared with the others. Each writer
// keeps to the sessions of one partition, as an agent keeps to its
// session: a writer going round every partition would stall the sessions
// of one while it waits out another's election, a coupling of the test's
// making that no session has.
type workload struct {
	l      *ledger
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func sessionIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("itest-%d", i)
	}
	return ids
}

// byPartition groups sessions by the partition holding them.
func byPartition(sessions []string) [][]string {
	groups := make([][]string, partitions)
	for _, sid := range sessions {
		p := stream.PartitionOf(sid, partitions)
		groups[p] = append(groups[p], sid)
	}
	return groups
}

// startWorkload starts perPartition writers for each partition holding
// some of sessions; those of a partition share its sessions.
func startWorkload(t *testing.T, urls string, perPartition int, sessions []string) *workload {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &workload{l: newLedger(), cancel: cancel}
	servers := strings.Split(urls, ",")
	k := 0
	for _, group := range byPartition(sessions) {
		if len(group) == 0 {
			continue
		}
		for range perPartition {
			w.wg.Add(1)
			go func(k int) {
				defer w.wg.Done()
				w.write(ctx, servers, k, group)
			}(k)
			k++
		}
	}
	return w
}

// dial connects to the servers, listed from the one at index first.
func dial(ctx context.Context, servers []string, first int) (*nats.Conn, *stream.Backend, error) {
	order := append(append([]string(nil), servers[first%len(servers):]...), servers[:first%len(servers)]...)
	// The library's own client settings: a client on a paused (SIGSTOP)
	// server notices within two seconds or so and fails over. (The server
	// list is shuffled, as a client's is by default: kept in order, every
	// writer that fails over lands on the same next node.)
	nc, err := nats.Connect(strings.Join(order, ","), cluster.ClientOptions("itest-writer")...)
	if err != nil {
		return nil, nil, err
	}
	cfg := stream.DefaultConfig()
	cfg.Replicas = 3 // and the library's timeouts, as a user has them
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, err := stream.New(pctx, nc, cfg, stream.WithConflictPolicy(stream.Rebase), stream.WithTelemetry(writerTelemetry))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, b, nil
}

// maxFailures is how many failures in a row make a writer move to another
// node: a node cut off from the others keeps its clients' connections up
// but cannot serve JetStream, and a client must go elsewhere itself. One
// is enough: a failed append has been resent until its deadline already.
const maxFailures = 1

func (w *workload) write(ctx context.Context, servers []string, k int, sessions []string) {
	stores := map[string]*stream.Store{}
	closeStore := func(st *stream.Store) {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st.Close(cctx)
	}
	closeAll := func() {
		for sid, st := range stores {
			closeStore(st)
			delete(stores, sid)
		}
	}
	defer closeAll()
	var nc *nats.Conn
	var b *stream.Backend
	defer func() {
		if nc != nil {
			nc.Close()
		}
	}()
	next, failures := k, 0
	for n := 0; ctx.Err() == nil; n++ {
		if nc == nil || failures >= maxFailures {
			closeAll()
			if nc != nil {
				nc.Close()
				next++
			}
			var err error
			if nc, b, err = dial(ctx, servers, next); err != nil {
				nc = nil
				w.l.fail(fmt.Errorf("dial: %w", err))
				next++
				pause(ctx, 100*time.Millisecond)
				continue
			}
			failures = 0
		}
		sid := sessions[(n+k)%len(sessions)]
		st := stores[sid]
		if st == nil {
			var err error
			octx, cancel := context.WithTimeout(ctx, 10*time.Second)
			st, err = b.OpenStore(octx, sid)
			cancel()
			if err != nil {
				w.l.fail(fmt.Errorf("open: %w", err))
				failures++
				pause(ctx, 100*time.Millisecond)
				continue
			}
			stores[sid] = st
		}
		leaf, _ := st.Leaf(ctx)
		id := fmt.Sprintf("w%d-%06d", k, n)
		e := &session.Entry{Type: session.TypeMessage, ID: id, ParentID: leaf, Timestamp: session.FormatTime(time.Now()),
			Message: &session.Message{Role: session.RoleUser, Content: session.TextContent(id), Timestamp: time.Now().UnixMilli()}}
		w.l.attempt(id, sid)
		// No deadline of its own: the library's default outlasts an
		// election, resending while the outcome is unknown.
		err := st.Append(ctx, e)
		if err == nil {
			w.l.ackVia(id, sid, nc.ConnectedServerName())
			failures = 0
			continue
		}
		// Whatever happened, start from what the stream holds.
		w.l.fail(fmt.Errorf("append: %w", err))
		failures++
		closeStore(st)
		delete(stores, sid)
		pause(ctx, 50*time.Millisecond)
	}
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (w *workload) stop() {
	w.cancel()
	w.wg.Wait()
}

// verdict is what the checker found.
type verdict struct {
	Attempted, Acked, Stored    int
	Lost, Duplicated, NeverSent int
	Sessions                    int
	UnackedStored               int
	LostIDs                     []string // the first few, with session and time of acknowledgement
}

// check reads every entry message of the stream raw and compares it with
// the ledger. It reads up to the last sequence the stream's leader has:
// the read's consumer may sit on a replica that has not applied the last
// writes yet, and must not make them look lost. A node just healed can
// answer "temporarily unavailable" for a moment: errors are returned for
// the caller to retry.
func check(ctx context.Context, urls string, l *ledger) (verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	nc, err := nats.Connect(urls)
	if err != nil {
		return verdict{}, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	seen := map[string]int{}
	for _, name := range layout().Streams() {
		if err := readEntries(ctx, js, name, seen); err != nil {
			return verdict{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	v := verdict{Attempted: len(l.attempted), Acked: len(l.acked), Stored: len(seen)}
	for id := range l.acked {
		if seen[id] == 0 {
			v.Lost++
			if len(v.LostIDs) < 10 {
				v.LostIDs = append(v.LostIDs, fmt.Sprintf("%s in %s acknowledged at %s", id, l.acked[id], l.ackedAt[id].Format("15:04:05.000")))
			}
		}
	}
	for id, n := range seen {
		if n > 1 {
			v.Duplicated++
		}
		if _, ok := l.attempted[id]; !ok {
			v.NeverSent++
		}
		if _, ok := l.acked[id]; !ok {
			v.UnackedStored++
		}
	}
	return v, nil
}

// settledVerdict waits for the cluster to converge, then checks the
// ledger against the streams.
func settledVerdict(t *testing.T, ctx context.Context, c *procCluster, l *ledger) verdict {
	t.Helper()
	sessiontest.CheckFor(t, 2*time.Minute, 100*time.Millisecond, func() error { return c.converged(ctx) })
	var v verdict
	sessiontest.CheckFor(t, 2*time.Minute, 200*time.Millisecond, func() (err error) {
		v, err = check(ctx, c.urls(), l)
		return err
	})
	return v
}

// treesAgree opens every session through every node and compares them.
func treesAgree(t *testing.T, ctx context.Context, c *procCluster, sessions []string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var want map[string][]byte
	for i := range c.nodes {
		nc, err := nats.Connect(c.url(i))
		if err != nil {
			return err
		}
		cfg := stream.DefaultConfig()
		cfg.Replicas = 3
		b, err := stream.New(ctx, nc, cfg)
		if err != nil {
			nc.Close()
			return err
		}
		got := map[string][]byte{}
		for _, sid := range sessions {
			st, err := b.OpenStore(ctx, sid)
			if err != nil {
				nc.Close()
				return fmt.Errorf("node %d, %s: %w", i, sid, err)
			}
			es, err := st.Entries(ctx)
			leaf, _ := st.Leaf(ctx)
			st.Close(ctx)
			if err != nil {
				nc.Close()
				return err
			}
			d := []byte(leaf)
			for _, e := range es {
				d = append(d, e.ID...)
				d = append(d, e.ParentID...)
			}
			got[sid] = d
		}
		nc.Close()
		if want == nil {
			want = got
			continue
		}
		for sid := range want {
			if string(want[sid]) != string(got[sid]) {
				return fmt.Errorf("node %d sees %s differently", i, sid)
			}
		}
	}
	return nil
}

func createSessions(t *testing.T, ctx context.Context, urls string, ids []string) {
	t.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cfg := stream.DefaultConfig()
	cfg.Replicas = 3
	b, err := stream.New(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		st, err := b.Create(ctx, sessiontest.TestHeader(id))
		if err != nil && !errors.Is(err, session.ErrSessionExists) {
			t.Fatal(err)
		}
		if st != nil {
			st.Close(ctx)
		}
	}
}

// readEntries counts, into seen, the message entries of stream name
// (those of the linearizability clients aside), up to its last sequence
// as its leader has it.
func readEntries(ctx context.Context, js jetstream.JetStream, name string, seen map[string]int) error {
	s, err := js.Stream(ctx, name)
	if err != nil {
		return err
	}
	info, err := s.Info(ctx) // answered by the leader
	if err != nil {
		return err
	}
	target := info.State.LastSeq
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{MaxResetAttempts: 3})
	if err != nil {
		return err
	}
	for last := uint64(0); last < target; {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil {
				return err
			}
			last = meta.Sequence.Stream
			if strings.Contains(m.Subject(), ".$sync.") || strings.Contains(m.Subject(), ".itest-lin-") || strings.Contains(m.Subject(), ".itest-static-") {
				continue // read barriers; the linearizability clients' sessions are checked by lincheck, imported ones by their exports
			}
			_, e, err := codec.DecodeMsgpack(m.Data())
			if err != nil {
				return fmt.Errorf("undecodable entry: %w", err)
			}
			if e == nil || e.Type != session.TypeMessage {
				continue // headers and the like
			}
			seen[e.ID]++
		}
		if n == 0 {
			return fmt.Errorf("read stalled at %d of the leader's %d", last, target)
		}
	}
	return nil
}
