// Package live keeps generations while they are streamed — the chunks an
// agent's reply is made of, as a chat app sends them to a browser — so
// that a reader can join one from its start, or come back after a cut, on
// any node: a stream of their own in JetStream, replicated as the
// sessions are, every record kept for the generation's TTL at most.
//
// A generation has one writer, which starts it, puts chunks and ends it;
// anyone may stop it. Each is a record on the generation's subjects —
// <prefix>.<key>.d for start, chunks and done, <prefix>.<key>.x for stop
// — written only if the generation stands where the writer last left it
// (JetStream's check of the last sequence on <prefix>.<key>.*): two
// writers cannot interleave, nothing is put after an end, and a stop is
// the end for everyone, whatever the writer does after it. Readers
// consume <prefix>.<key>.* from the first record: the records are the
// stream, in order, and an end record ends it.
//
// Records are repeated safely: each carries a message id (the writer's
// token and the sequence it extends). JetStream checks the last sequence
// before it looks for a repeated id, so a resend of a record that landed
// fails the check; finding its own id on the last record, the writer
// knows it landed, and it is stored once.
package live

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/internal/lru"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// Errors.
var (
	// ErrNotFound is a generation with no record: never started, or
	// expired.
	ErrNotFound = errors.New("live: generation not found")
	// ErrMoved is a write that does not continue the generation where
	// the writer says it left it: another writer, or a lost record.
	ErrMoved = errors.New("live: generation moved on")
	// ErrInvalid is a request the generations cannot take: an
	// *InvalidError says which part and why.
	ErrInvalid = errors.New("live: invalid")
)

// InvalidError is a request's part the generations cannot take.
type InvalidError struct {
	// Field is the part: id, writer, after, ttl or chunks.
	Field, Reason string
}

func (e *InvalidError) Error() string { return "live: invalid " + e.Field + ": " + e.Reason }

// Unwrap makes it ErrInvalid.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Kinds of record, in the Sessionlog-Live header.
const (
	KindStart  = "start"
	KindChunks = "chunks"
	KindDone   = "done"
	KindStop   = "stop"
)

// Headers of a record.
const (
	// KindHeader says what a record is.
	KindHeader = "Sessionlog-Live"
	// ContinuesHeader, on a chunks record, says its last chunk goes on in
	// the next record (a chunk larger than a record).
	ContinuesHeader = "Sessionlog-Live-Continues"
)

// Config shapes the generations' stream.
type Config struct {
	// Stream and Prefix name the stream and its subjects.
	Stream, Prefix string
	// Replicas is the stream's replication factor.
	Replicas int
	// TTL is how long a record is kept when the writer names no TTL:
	// resumable-stream's 24 hours.
	TTL time.Duration
	// MaxTTL bounds the TTLs writers name, and is the stream's MaxAge.
	MaxTTL time.Duration
	// MaxBytes bounds every generation kept, together: past it a record
	// is refused (never an older one dropped).
	MaxBytes int64
	// MaxRecords bounds the records of one generation.
	MaxRecords int64
	// MaxIDBytes bounds a generation's id.
	MaxIDBytes int
}

// DefaultConfig is the config of a deployment's stream and prefix.
func DefaultConfig(stream, prefix string, replicas int) Config {
	return Config{Stream: stream, Prefix: prefix, Replicas: replicas, TTL: 24 * time.Hour, MaxTTL: 7 * 24 * time.Hour,
		MaxBytes: 1 << 30, MaxRecords: 1 << 16, MaxIDBytes: 512}
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.Stream == "" || c.Prefix == "":
		return fmt.Errorf("%w config: a stream and a prefix are required", ErrInvalid)
	case c.TTL < time.Second || c.MaxTTL < c.TTL:
		return fmt.Errorf("%w config: TTL %v must be at least a second and at most MaxTTL %v", ErrInvalid, c.TTL, c.MaxTTL)
	case c.MaxBytes <= 0 || c.MaxRecords <= 0 || c.MaxIDBytes <= 0:
		return fmt.Errorf("%w config: MaxBytes, MaxRecords and MaxIDBytes must be positive", ErrInvalid)
	}
	return nil
}

// Generations is a deployment's generations being streamed.
type Generations struct {
	rq  *jsx.Requester
	cfg Config

	mu    sync.Mutex
	ready bool

	// last is each generation's last record this node wrote (under
	// lastMu, a leaf lock never held across a request).
	lastMu sync.Mutex
	last   *lru.Cache[string, written]
}

// New keeps generations in cfg's stream, made on first use.
func New(rq *jsx.Requester, cfg Config) (*Generations, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Generations{rq: rq, cfg: cfg, last: lru.New[string, written]()}, nil
}

// Config is the config the generations were made with.
func (g *Generations) Config() Config { return g.cfg }

func (g *Generations) provision(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ready {
		return nil
	}
	err := jsx.Provisioning(ctx, func(ctx context.Context) error {
		_, err := g.rq.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:        g.cfg.Stream,
			Description: "sessionlog generations being streamed",
			Subjects:    []string{g.cfg.Prefix + ".>"},
			Storage:     jetstream.FileStorage,
			Replicas:    g.cfg.Replicas,
			MaxAge:      g.cfg.MaxTTL,
			MaxBytes:    g.cfg.MaxBytes,
			// Two subjects a generation: its records, and its stop.
			MaxMsgsPerSubject:    g.cfg.MaxRecords,
			Discard:              jetstream.DiscardNew,
			DiscardNewPerSubject: true,
			AllowMsgTTL:          true,
			AllowDirect:          true,
			Duplicates:           2 * time.Minute,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("live: provision %s: %w", g.cfg.Stream, err)
	}
	g.ready = true
	return nil
}

// Key is the subject token of a generation id: ids are any string, and
// subjects hold only some.
func Key(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:16])
}

// Subjects of generation id: all of its records (what readers consume),
// its records but the stop, and its stop.
func (g *Generations) Subjects(id string) (all, records, stop string) {
	base := g.cfg.Prefix + "." + Key(id)
	return base + ".*", base + ".d", base + ".x"
}

// startRecord is a start record's body: the generation's id as given,
// and its writer's token.
type startRecord struct {
	ID     string `json:"id"`
	Writer string `json:"writer"`
}

// State is where a generation stands.
type State struct {
	// Exists is false for a generation with no record.
	Exists bool
	// Ended is "" while it runs, KindDone or KindStop once ended.
	Ended string
	// Seq is the stream sequence of its last record: where a write must
	// continue from.
	Seq uint64
	// MsgID is its last record's message id (see msgID).
	MsgID string
}

// State reads where generation id stands, as the stream's leader holds
// it.
func (g *Generations) State(ctx context.Context, id string) (State, error) {
	if err := g.checkID(id); err != nil {
		return State{}, err
	}
	if err := g.provision(ctx); err != nil {
		return State{}, err
	}
	all, _, _ := g.Subjects(id)
	last, err := g.rq.LastOf(ctx, g.cfg.Stream, all)
	if err != nil {
		return State{}, fmt.Errorf("live: state of %q: %w", id, err)
	}
	if last == nil {
		return State{}, nil
	}
	st := State{Exists: true, Seq: last.Sequence, MsgID: last.Header.Get(jetstream.MsgIDHeader)}
	if k := last.Header.Get(KindHeader); k == KindDone || k == KindStop {
		st.Ended = k
	}
	return st, nil
}

func (g *Generations) checkID(id string) error {
	switch {
	case id == "":
		return invalid("id", "a generation needs an id")
	case len(id) > g.cfg.MaxIDBytes:
		return invalid("id", "%d bytes, over the limit of %d", len(id), g.cfg.MaxIDBytes)
	}
	return nil
}

// ttl is the TTL a writer asked for (0: the default), checked.
func (g *Generations) ttl(asked time.Duration) (time.Duration, error) {
	switch {
	case asked == 0:
		return g.cfg.TTL, nil
	case asked < time.Second || asked > g.cfg.MaxTTL:
		return 0, invalid("ttl", "%v is not between a second and %v", asked, g.cfg.MaxTTL)
	}
	return asked, nil
}

// Start begins generation id for writer (a token of the writer's, the
// same on a resend), its records kept for ttl. It reports whether this
// writer started it; a generation that exists already — running or
// ended — is not started again, and its state is returned.
func (g *Generations) Start(ctx context.Context, id, writer string, ttl time.Duration) (State, bool, error) {
	if err := g.checkID(id); err != nil {
		return State{}, false, err
	}
	if writer == "" || len(writer) > 128 {
		return State{}, false, invalid("writer", "a token of 1 to 128 bytes is required")
	}
	ttl, err := g.ttl(ttl)
	if err != nil {
		return State{}, false, err
	}
	if err := g.provision(ctx); err != nil {
		return State{}, false, err
	}
	all, records, _ := g.Subjects(id)
	msg := nats.NewMsg(records)
	msg.Header.Set(KindHeader, KindStart)
	// The id and the token are anyone's strings: in the body, never in a
	// header, where a line break would end it.
	msg.Data, err = json.Marshal(startRecord{ID: id, Writer: writer})
	if err != nil {
		return State{}, false, invalid("id", "%v", err)
	}
	mid := msgID(id, writer, "start")
	seq, err := g.publish(ctx, msg, mid, 0, all, ttl)
	switch {
	case err == nil:
		g.wrote(id, writer, seq)
		return State{Exists: true, Seq: seq, MsgID: mid}, true, nil
	case !errors.Is(err, ErrMoved):
		return State{}, false, err
	}
	st, err := g.State(ctx, id)
	if err != nil {
		return State{}, false, err
	}
	// A resend of our own start that landed (its answer lost) is ours.
	return st, st.MsgID == mid, nil
}

// msgID is the message id of writer's record of generation id: what
// follows start, or the sequence it extends with the record's kind and
// content. The token is hashed: it is anyone's string, and a header turns
// its line breaks into spaces.
func msgID(id, writer, what string) string {
	return Key(id) + "/" + Key(writer) + "/" + what
}

// writerOf is the writer's key in a record's message id ("" for a stop,
// which is anyone's).
func writerOf(mid string) string {
	parts := strings.SplitN(mid, "/", 3)
	if len(parts) < 3 || parts[1] == "stop" {
		return ""
	}
	return parts[1]
}

// contentKey names a record's content in its message id.
func contentKey(body []byte, continues bool) string {
	h := sha256.New()
	h.Write(body)
	if continues {
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// maxWritten bounds the generations whose last record this node wrote
// and remembers.
const maxWritten = 1 << 14

// wrote remembers that writer's record at seq is generation id's last.
func (g *Generations) wrote(id, writer string, seq uint64) {
	g.lastMu.Lock()
	defer g.lastMu.Unlock()
	g.last.Put(id, written{writer: Key(writer), seq: seq})
	if g.last.Len() > maxWritten {
		g.last.Trim(maxWritten*7/8, nil)
	}
}

// wroteLast reports whether this node wrote writer's record at after as
// generation id's last: then the record a write continues is the
// writer's, with no need to read it.
func (g *Generations) wroteLast(id, writer string, after uint64) bool {
	g.lastMu.Lock()
	defer g.lastMu.Unlock()
	w, ok := g.last.Get(id)
	return ok && w.seq == after && w.writer == Key(writer)
}

type written struct {
	writer string
	seq    uint64
}

// Put adds chunks to generation id after the record at sequence after
// (the last the writer wrote); continues says the last chunk goes on in
// the next record. It returns the new record's sequence; a generation
// that ended meanwhile (stopped) is returned as its state, with nothing
// put.
func (g *Generations) Put(ctx context.Context, id, writer string, after uint64, chunks []string, continues bool, ttl time.Duration) (State, error) {
	body, err := json.Marshal(chunks)
	if err != nil {
		return State{}, invalid("chunks", "%v", err)
	}
	return g.write(ctx, id, writer, after, KindChunks, body, continues, ttl)
}

// End ends generation id after the record at sequence after: readers
// stop there.
func (g *Generations) End(ctx context.Context, id, writer string, after uint64, ttl time.Duration) (State, error) {
	return g.write(ctx, id, writer, after, KindDone, nil, false, ttl)
}

func (g *Generations) write(ctx context.Context, id, writer string, after uint64, kind string, body []byte, continues bool, ttl time.Duration) (State, error) {
	if err := g.checkID(id); err != nil {
		return State{}, err
	}
	ttl, err := g.ttl(ttl)
	if err != nil {
		return State{}, err
	}
	if after == 0 {
		return State{}, invalid("after", "the sequence of the writer's last record is required")
	}
	if err := g.provision(ctx); err != nil {
		return State{}, err
	}
	all, records, _ := g.Subjects(id)
	msg := nats.NewMsg(records)
	msg.Header.Set(KindHeader, kind)
	if continues {
		msg.Header.Set(ContinuesHeader, "1")
	}
	msg.Data = body
	// The record's id names what it is as well as where: a resend of it
	// is found to have landed; another record at the same place (a
	// second put, an end) is a conflict, never taken for a resend.
	what := strconv.FormatUint(after, 10) + "/" + kind + "/" + contentKey(body, continues)
	mid := msgID(id, writer, what)
	// Only the generation's writer writes to it: the record at after
	// (its last) must be the writer's own.
	if !g.wroteLast(id, writer, after) {
		st, err := g.State(ctx, id)
		if st, settled, err := settled(id, mid, st, err); settled {
			return st, err
		}
		if st.Seq == after && writerOf(st.MsgID) != Key(writer) {
			return State{}, fmt.Errorf("%w: %q is written by the writer that started it, not this one", ErrMoved, id)
		}
	}
	seq, err := g.publish(ctx, msg, mid, after, all, ttl)
	if err == nil {
		st := State{Exists: true, Seq: seq, MsgID: mid}
		if kind == KindDone {
			st.Ended = KindDone
		}
		g.wrote(id, writer, seq)
		return st, nil
	}
	if !errors.Is(err, ErrMoved) {
		return State{}, err
	}
	st, serr := g.State(ctx, id)
	if st, settled, err := settled(id, mid, st, serr); settled {
		return st, err
	}
	return State{}, fmt.Errorf("%w: %q is at record %d, not %d: another writer, or a record lost", ErrMoved, id, st.Seq, after)
}

// settled says what a write of the record mid answers, given where
// generation id stands (st, read with err), when that alone decides: the
// record is its last already (a resend: it landed), the generation is
// gone, or it ended.
func settled(id, mid string, st State, err error) (State, bool, error) {
	switch {
	case err != nil:
		return State{}, true, err
	case st.MsgID == mid:
		return st, true, nil // this very record, sent again: it landed the first time
	case !st.Exists:
		return State{}, true, fmt.Errorf("%w: %q (expired, or never started)", ErrNotFound, id)
	case st.Ended != "":
		return st, true, nil
	}
	return st, false, nil
}

// Stop ends generation id for everyone: its writer's next record is
// refused, and readers end at the stop. A generation that ended already
// is left as it is. It returns the generation's state after.
func (g *Generations) Stop(ctx context.Context, id string) (State, error) {
	all, _, stop := g.Subjects(id)
	for range 16 {
		st, err := g.State(ctx, id)
		if err != nil {
			return State{}, err
		}
		if !st.Exists {
			return State{}, fmt.Errorf("%w: %q (expired, or never started)", ErrNotFound, id)
		}
		if st.Ended != "" {
			return st, nil
		}
		msg := nats.NewMsg(stop)
		msg.Header.Set(KindHeader, KindStop)
		seq, err := g.publish(ctx, msg, Key(id)+"/stop/"+strconv.FormatUint(st.Seq, 10), st.Seq, all, g.cfg.TTL)
		if err == nil {
			return State{Exists: true, Ended: KindStop, Seq: seq}, nil
		}
		if !errors.Is(err, ErrMoved) {
			return State{}, err
		}
		// The writer put a record meanwhile: stop after it.
	}
	return State{}, fmt.Errorf("%w: %q kept moving while it was stopped", ErrMoved, id)
}

// publish stores msg if the last record on all is at after, resending
// while its outcome is unknown; a failed check is ErrMoved.
func (g *Generations) publish(ctx context.Context, msg *nats.Msg, msgID string, after uint64, all string, ttl time.Duration) (uint64, error) {
	var ack *jetstream.PubAck
	err := g.rq.Resend(ctx, func(ctx context.Context) (err error) {
		ack, err = g.rq.JS.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID), jetstream.WithMsgTTL(ttl),
			jetstream.WithExpectLastSequenceForSubject(after, all))
		return err
	}, nil)
	switch {
	case err == nil:
		return ack.Sequence, nil
	case jsx.IsWrongLastSeq(err):
		return 0, ErrMoved
	case errors.Is(err, errStoreFailed) || errors.Is(err, errTooLarge):
		// Discard-new's refusals: a generation's records, or every
		// generation's bytes.
		return 0, fmt.Errorf("%w: %v", ErrFull, err)
	}
	return 0, fmt.Errorf("live: write %s: %w", msg.Subject, err)
}

// ErrFull is a record refused because a bound of the stream is reached:
// a generation's records, or every generation's bytes.
var ErrFull = errors.New("live: full")

var (
	errStoreFailed = &jetstream.APIError{ErrorCode: 10077}
	errTooLarge    = &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamMessageExceedsMaximum}
)
