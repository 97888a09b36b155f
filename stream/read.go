package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// read delivers the session's messages after sequence `after`, in order,
// until it has caught up with what the stream held when the read began.
// It returns the sequence of the last message delivered (after, if none).
func (b *Backend) read(ctx context.Context, id string, after uint64, fn func(Message) error) (uint64, error) {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	subject := b.cfg.sessionSubjects(id)
	last := after
	// Read what was there when the read began (the first message says
	// how many follow): a session being written to faster than it is
	// read must not keep the read going forever.
	var remaining uint64
	started := false
	for !started || remaining > 0 {
		n := 0
		var ferr error // the caller's, or a decoding error: returned as it is
		var end jsx.BatchEnd
		deliver := func(m *jetstream.RawStreamMsg, pending uint64) error {
			if !started {
				started, remaining = true, pending+1
			}
			if remaining == 0 {
				return nil
			}
			n++
			msg, err := b.cfg.decode(id, m.Subject, m.Data, m.Sequence)
			msg.Origin, msg.Bytes = m.Header.Get(OriginHeader), len(m.Data)
			if err == nil {
				err = fn(msg)
			}
			if err != nil {
				ferr = err
				return err
			}
			last = m.Sequence
			remaining--
			return nil
		}
		// A batch cut short is asked again from where it stopped.
		err := b.rq.Resend(ctx, func(ctx context.Context) (err error) {
			end, err = b.getBatch(ctx, subject, last+1, deliver)
			return err
		}, nil)
		switch {
		case errors.Is(err, jsx.ErrNoMessages):
			return last, nil // nothing (more) after last: the session ends there
		case ferr != nil:
			return last, ferr
		case err != nil:
			return last, fmt.Errorf("stream: read %s: %w", id, err)
		case end.Pending == 0 || n == 0:
			return last, nil
		}
	}
	return last, nil
}

func (c Config) decode(id, subject string, data []byte, seq uint64) (Message, error) {
	sid, typ, ok := c.sessionOf(subject)
	if !ok || sid != id {
		return Message{}, fmt.Errorf("%w: message %d on %q does not belong to session %s", ErrCorrupt, seq, subject, id)
	}
	if !c.typed {
		h, e, err := codec.DecodeMsgpack(data)
		if err != nil {
			return Message{}, fmt.Errorf("%w: %s seq %d: %w", ErrCorrupt, id, seq, err)
		}
		if err := knownVersion(h); err != nil {
			return Message{}, err
		}
		return Message{Session: id, Seq: seq, Header: h, Entry: e}, nil
	}
	if typ == string(session.TypeSession) {
		h, err := codec.DecodeHeaderMsgpack(data)
		if err != nil {
			return Message{}, fmt.Errorf("%w: header of %s (seq %d): %w", ErrCorrupt, id, seq, err)
		}
		if err := knownVersion(h); err != nil {
			return Message{}, err
		}
		return Message{Session: id, Seq: seq, Header: h}, nil
	}
	e, err := codec.DecodeEntryMsgpack(data)
	if err != nil {
		return Message{}, fmt.Errorf("%w: %s seq %d: %w", ErrCorrupt, id, seq, err)
	}
	if string(e.Type) != typ {
		return Message{}, fmt.Errorf("%w: %s seq %d: a %s entry on a %s subject", ErrCorrupt, id, seq, e.Type, typ)
	}
	return Message{Session: id, Seq: seq, Entry: e}, nil
}

// knownVersion refuses a session whose header is of a format newer than
// this release writes: a later release's session, which this node does
// not read (nor write to) rather than read wrong.
func knownVersion(h *session.Header) error {
	if h == nil {
		return nil
	}
	// Every older version is read, as it always was.
	if err := session.CheckFormat("session", h.ID, h.Version, math.MinInt, session.CurrentVersion); err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	return nil
}

func (b *Backend) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return jsx.WithTimeout(ctx, b.cfg.RequestTimeout)
}

// loadTree reads a whole session into a tree. It returns the sequence of
// the header (the session's epoch) and of the last message.
func (b *Backend) loadTree(ctx context.Context, id string) (t *session.Tree, epoch, last uint64, err error) {
	return b.loadTreeWith(ctx, id, func(ctx context.Context) (*session.Tree, uint64, uint64, error) { return b.loadTreeOnce(ctx, id) })
}

// loadTreeWith is loadTree reading with once.
func (b *Backend) loadTreeWith(ctx context.Context, id string, once func(ctx context.Context) (*session.Tree, uint64, uint64, error)) (t *session.Tree, epoch, last uint64, err error) {
	// A read may be answered by a replica behind the leader that does not
	// know a session created a moment ago: "not found" is only believed
	// once a read behind a barrier says so too.
	for attempt := 0; ; attempt++ {
		t, epoch, last, err = once(ctx)
		if !errors.Is(err, session.ErrSessionNotFound) || attempt == 20 {
			return t, epoch, last, err
		}
		_, lerr := b.freshLast(ctx, b.cfg.sessionSubjects(id))
		switch {
		case errors.Is(lerr, jetstream.ErrMsgNotFound):
			return t, epoch, last, err // the leader has none either
		case lerr != nil:
			// Not known either way: never report a session that may exist
			// as missing.
			return t, epoch, last, fmt.Errorf("stream: read %s: %w", id, lerr)
		}
		select {
		case <-ctx.Done():
			return t, epoch, last, err
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
}

func (b *Backend) loadTreeOnce(ctx context.Context, id string) (t *session.Tree, epoch, last uint64, err error) {
	return b.readTree(ctx, id, 0, math.MaxUint64)
}

// sameHeader reports whether a header read again is a copy of h (the
// same session created once), not a session created again under its id.
func sameHeader(a, b session.Header) bool {
	return a.ID == b.ID && a.Timestamp == b.Timestamp && a.Version == b.Version && a.Cwd == b.Cwd && a.ParentSession == b.ParentSession
}

// errPastEnd ends a read at the sequence readTree was given.
var errPastEnd = errors.New("stream: past the end of the read")

// readTree reads the session from the stream into a tree, up to sequence
// until; with epoch set, only the session whose header is at epoch (not
// one deleted and created again).
func (b *Backend) readTree(ctx context.Context, id string, wantEpoch, until uint64) (t *session.Tree, epoch, last uint64, err error) {
	return b.readTreeAs(ctx, id, wantEpoch, until, session.NewTree)
}

// readTreeAs is readTree into the tree newTree makes (session.NewLeanTree:
// a selection over a session too large to hold).
func (b *Backend) readTreeAs(ctx context.Context, id string, wantEpoch, until uint64, newTree func(session.Header) *session.Tree) (t *session.Tree, epoch, last uint64, err error) {
	last, err = b.read(ctx, id, 0, func(r Message) error {
		switch {
		case r.Seq > until:
			return errPastEnd
		case r.Header != nil && t == nil && wantEpoch != 0 && r.Seq != wantEpoch:
			return fmt.Errorf("%w: %s was created again (seq %d) since it was opened", session.ErrSessionNotFound, id, r.Seq)
		case r.Header != nil && t == nil:
			t = newTree(*r.Header)
			epoch = r.Seq
		case r.Header != nil && sameHeader(*r.Header, t.Header()):
			// A copy of the header: stored twice by a stream source
			// (JetStream can deliver a sourced message twice).
		case r.Header != nil:
			// Created on another node too, while apart (a delete here
			// would have purged the first): one session.
			t.MeetHeader(*r.Header)
		case t == nil:
			// Written on another node after the session was deleted
			// here (a delete is a node's own): it stays deleted here.
		case t.Has(r.Entry.ID):
			// A copy of an entry stored before (a stream source's, or a
			// resend the server did not know for one): the first is the
			// entry, as a catch-up has it.
		default:
			if err := t.ApplyFrom(r.Origin, r.Entry); err != nil {
				return fmt.Errorf("%w: %s seq %d: %w", ErrCorrupt, id, r.Seq, err)
			}
		}
		return nil
	})
	if errors.Is(err, errPastEnd) {
		last, err = until, nil
	}
	if err != nil {
		return nil, 0, 0, err
	}
	if t == nil {
		return nil, 0, 0, fmt.Errorf("%w: %q", session.ErrSessionNotFound, id)
	}
	return t, epoch, last, nil
}

// Message is one message of the stream decoded: the session it belongs to,
// its sequence, and its header or entry.
type Message struct {
	Session string
	Seq     uint64
	Header  *session.Header
	Entry   *session.Entry
	// Origin is the node the entry was written on (OriginHeader), where
	// the reader had the message's headers.
	Origin string
	// Bytes is the size of the message's data as stored, where the
	// reader had it (a fork charges what it copies).
	Bytes int
}

// OriginHeader names the node a message was written on (Config.Origin).
const OriginHeader = "Sessionlog-Origin"

// Decode decodes a message of the layout's streams delivered on subject:
// see Config.Decode. (Replicas and event consumers call it for every
// message: the partitions' configs are made once, in New.)
func (b *Backend) Decode(subject string, data []byte, seq uint64) (Message, error) {
	i, ok := b.cfg.partitionOfSubject(subject)
	if !ok {
		return Message{}, fmt.Errorf("%w: message %d on %q is not a session's", ErrCorrupt, seq, subject)
	}
	return b.parts[i].cfg.decodeInPartition(subject, data, seq)
}

// TypeOf is the entry type of a message of the layout's streams
// ("session" for a header), from its subject where the layout names it and
// otherwise from the message, without decoding the rest of it.
func (b *Backend) TypeOf(subject string, data []byte) (session.EntryType, error) {
	i, ok := b.cfg.partitionOfSubject(subject)
	if !ok {
		return "", fmt.Errorf("%w: %q is not a session's subject", ErrCorrupt, subject)
	}
	c := b.parts[i].cfg
	if _, typ, ok := c.sessionOf(subject); ok && c.typed {
		return session.EntryType(typ), nil
	}
	typ, err := codec.MsgpackType(data)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrCorrupt, subject, err)
	}
	return session.EntryType(typ), nil
}

// SessionSubjects is Config.SessionSubjects.
func (b *Backend) SessionSubjects(id string) string { return b.partOf(id).cfg.sessionSubjects(id) }

// Decode decodes a message of the layout's streams delivered on subject
// (seq is its sequence in its partition's stream). Naming and decoding
// need only the config: a reader of the stream (an SSE stream of the
// gateway) needs no provisioned Backend for them.
func (c Config) Decode(subject string, data []byte, seq uint64) (Message, error) {
	i, ok := c.partitionOfSubject(subject)
	if !ok {
		return Message{}, fmt.Errorf("%w: message %d on %q is not a session's", ErrCorrupt, seq, subject)
	}
	return c.partition(i).decodeInPartition(subject, data, seq)
}

// decodeInPartition is Decode on the config of the subject's partition.
func (c Config) decodeInPartition(subject string, data []byte, seq uint64) (Message, error) {
	if subject == c.barrierSubject() {
		return Message{}, ErrNotSession
	}
	id, _, ok := c.sessionOf(subject)
	if !ok {
		return Message{}, fmt.Errorf("%w: message %d on %q is not a session's", ErrCorrupt, seq, subject)
	}
	return c.decode(id, subject, data, seq)
}

// SessionSubjects is the filter of one session's messages, in the stream
// StreamOf(id) names.
func (c Config) SessionSubjects(id string) string {
	return c.partitionOf(id).sessionSubjects(id)
}

// StreamOf returns the stream that holds session id.
func (b *Backend) StreamOf(id string) jetstream.Stream { return b.partOf(id).stream }

// Conn returns the connection the backend reads and writes on.
func (b *Backend) Conn() *nats.Conn { return b.nc }

// Partition is one stream of the layout, for readers that follow every
// session in it (replicas, event consumers): sequences are per partition.
type Partition struct{ b *Backend }

// Partitions returns the layout's partitions, in order.
func (b *Backend) Partitions() []Partition {
	out := make([]Partition, len(b.parts))
	for i, p := range b.parts {
		out[i] = Partition{p}
	}
	return out
}

// Index is the partition's number, 0 to P-1.
func (p Partition) Index() int { return p.b.cfg.part }

// Stream returns the partition's stream.
func (p Partition) Stream() jetstream.Stream { return p.b.stream }

// Subjects is the filter of every session's messages in the partition.
func (p Partition) Subjects() string { return p.b.cfg.Prefix + ".>" }

// TypeFilter picks a partition's entries of some types out of its
// messages, in either subject layout: Subjects are the consumer filter
// to ask the server for, and Keep decides each message the filter let
// through. With a subject per session (every deployment but those made
// before it) the subject does not tell a session's entries apart, so the
// filter takes in every message of the partition and Keep reads each
// one's type; in the older layout of a subject per entry type the
// subjects did it, and Keep keeps all.
type TypeFilter struct {
	Subjects []string
	typed    bool
	types    []session.EntryType
	b        *Backend
}

// TypeFilter is the partition's filter of entries of the given types.
func (p Partition) TypeFilter(types ...session.EntryType) TypeFilter {
	f := TypeFilter{types: slices.Clone(types), b: p.b, typed: p.b.cfg.typed}
	if !f.typed {
		f.Subjects = []string{p.b.cfg.sessionsFilter()}
		return f
	}
	for _, t := range types {
		f.Subjects = append(f.Subjects, p.b.cfg.Prefix+".*."+string(t))
	}
	return f
}

// Keep reports whether a message the filter let through may be an entry
// of its types: false for a header or an entry of another type. A message
// whose type cannot be read is kept, so that decoding it reports why (an
// event consumer dead-letters it, an indexer notes it).
func (f TypeFilter) Keep(subject string, data []byte) bool {
	if f.typed {
		return true
	}
	typ, err := f.b.TypeOf(subject, data)
	return err != nil || slices.Contains(f.types, typ)
}

// WatchIndex watches the partition's index from now on: a deletion (a
// record removed) means the session was deleted, which leaves no message
// in the stream to tail. The caller stops the watcher.
func (p Partition) WatchIndex(ctx context.Context) (jetstream.KeyWatcher, error) {
	w, err := p.b.kv.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("stream: watch index: %w", err)
	}
	return w, nil
}

// Deletions calls deleted with the id of each session removed from the
// index w watches (WatchIndex), until ctx ends or the watcher does; it
// stops the watcher. Replicas and search indexes follow deletions with
// it: a deletion leaves no message in the stream to see.
func Deletions(ctx context.Context, w jetstream.KeyWatcher, deleted func(id string)) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return // the watcher ended
			}
			if e == nil || e.Operation() == jetstream.KeyValuePut || session.ValidateSessionID(e.Key()) != nil {
				continue
			}
			deleted(e.Key())
		}
	}
}

// getBatch asks for up to a batch of the partition's messages on subject
// from sequence from on (see jsx.Requester.GetBatch).
func (b *Backend) getBatch(ctx context.Context, subject string, from uint64, fn func(m *jetstream.RawStreamMsg, pending uint64) error) (jsx.BatchEnd, error) {
	return b.rq.GetBatch(ctx, b.cfg.Stream, subject, from, fn)
}
