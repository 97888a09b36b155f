package gateway

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// events streams a session's entries as server-sent events, read from the
// stream on the caller's own connection (so only a session of the caller's
// tenant can be followed). Each event is
//
//	id: <stream sequence>
//	event: entry            (or header: the session's header line)
//	data: <the entry, pi v3 JSON>
//
// From ?after=<sequence> (or the Last-Event-ID a reconnecting EventSource
// sends) onwards; without either, only entries appended from now on.
func (g *Gateway) events(w http.ResponseWriter, r *http.Request) {
	w, r, end := g.trace(w, r, "events")
	defer end()
	id := r.PathValue("id")
	if err := session.ValidateSessionID(id); err != nil {
		writeError(w, &api.Error{Code: api.CodeInvalidSessionID, Field: "/session", Message: err.Error()}, 0)
		return
	}
	after, from, err := startOf(r)
	if err != nil {
		writeError(w, err, 0)
		return
	}
	refs := false
	if v := r.URL.Query().Get("refs"); v != "" {
		if refs, err = refsParam(v); err != nil {
			writeError(w, err, 0)
			return
		}
	}
	u, release, ok := g.admit(w, r)
	if !ok {
		return
	}
	defer release()
	done, err := g.streams.acquire(g.tenantOf(u), u.rateKey)
	if err != nil {
		writeError(w, err, 0)
		return
	}
	defer done()
	longLived(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// One lookup of the stream (provisioning it, its object store and
	// index on every event stream cost a dozen requests); subjects and
	// decoding come from the config.
	sc := g.cfg.Stream
	js, err := jetstream.New(u.nc)
	var st jetstream.Stream
	if err == nil {
		st, err = js.Stream(ctx, sc.StreamOf(id))
	}
	if err != nil {
		writeError(w, &api.Error{Code: api.CodeUnavailable, Message: err.Error()}, 0)
		return
	}
	// The session must exist now (a stream that never starts would look
	// like a quiet session).
	if err := g.exists(ctx, u, id); err != nil {
		writeError(w, err, 0)
		return
	}
	// The consumer is the caller's (it counts towards the user's bound of
	// consumers): deleted when the stream ends, and gone soon after a
	// crash.
	cc := jetstream.OrderedConsumerConfig{FilterSubjects: []string{sc.SessionSubjects(id)}, DeliverPolicy: jetstream.DeliverNewPolicy,
		InactiveThreshold: 30 * time.Second}
	if from {
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cons, err := st.OrderedConsumer(ctx, cc)
	if err != nil {
		writeError(w, &api.Error{Code: api.CodeUnavailable, Message: err.Error()}, 0)
		return
	}
	q := newEventQueue(g.cfg.StreamBuffer)
	// Few messages pulled ahead: a slow client is found out by its
	// queue, not buffered for in the client library.
	cctx, err := cons.Consume(q.push, jetstream.PullMaxMessages(8))
	if err != nil {
		writeError(w, &api.Error{Code: api.CodeUnavailable, Message: err.Error()}, 0)
		return
	}
	defer func() {
		cctx.Stop()
		if info := cons.CachedInfo(); info != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = js.DeleteConsumer(dctx, info.Stream, info.Name)
			cancel()
		}
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := &eventWriter{w: w, rc: http.NewResponseController(w), timeout: g.cfg.WriteTimeout, last: after,
		conn: connOf(r.Context()), buffer: g.cfg.StreamBuffer}
	if !refs {
		out.fetch = &fetcher{ctx: ctx, c: u.c, max: g.cfg.MaxUploadBytes}
	}
	if out.send(": sessionlog events of "+id+"\n\n") != nil {
		return
	}
	beat := time.NewTicker(g.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.ctx.Done():
			return
		case <-beat.C:
			if out.send(": keep-alive\n\n") != nil {
				return
			}
		case <-q.ready:
			msgs, overflowed := q.take()
			if overflowed {
				// Everything queued is dropped (and released); the client
				// resumes from the last event it got.
				out.slowReader()
				return
			}
			for _, m := range msgs {
				if out.stalled() {
					// What it has not read fills the socket: the event is
					// sent while there is still room for it.
					out.slowReader()
					return
				}
				if out.entry(sc, m) != nil {
					return
				}
			}
		}
	}
}

// eventWriter writes events, each write bounded by a deadline: a client
// that stops reading is cut off after timeout instead of holding the
// handler (and what it buffers) forever.
type eventWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	last    uint64 // the sequence of the last entry sent
	// fetch resolves references to content stored apart (nil: the
	// client asked for references).
	fetch *fetcher
	// conn is the client's connection (nil: unknown); buffer the bytes
	// it may leave unread (Config.StreamBuffer).
	conn   net.Conn
	buffer int
}

func (e *eventWriter) send(s string) error { return e.write([]byte(s)) }

// slowReader ends the stream with the documented event: reconnect from
// the last event received.
func (e *eventWriter) slowReader() {
	e.send(fmt.Sprintf("event: error\ndata: {\"code\":\"slow_reader\",\"message\":\"the client read more slowly than the session grew: reconnect with Last-Event-ID %d\",\"lastEventId\":%d}\n\n", e.last, e.last))
}

// stalled reports a client that has left more than its buffer unread in
// the socket (or a quarter of its send buffer, whichever is less): one
// that stopped reading would otherwise be cut by the write deadline, with
// no room left for the slow_reader event.
func (e *eventWriter) stalled() bool {
	if e.conn == nil {
		return false
	}
	queued, sndbuf, ok := unsent(e.conn)
	return ok && queued > min(e.buffer, sndbuf/4)
}

// write writes parts as one event (no copy of a large entry into one
// buffer per client), then flushes.
func (e *eventWriter) write(parts ...[]byte) error {
	if err := e.rc.SetWriteDeadline(time.Now().Add(e.timeout)); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := e.w.Write(p); err != nil {
			return err
		}
	}
	return e.rc.Flush()
}

// entry sends one stored message as an event.
func (e *eventWriter) entry(sc stream.Config, m jetstream.Msg) error {
	meta, err := m.Metadata()
	if err != nil {
		return nil
	}
	dm, err := sc.Decode(m.Subject(), m.Data(), meta.Sequence.Stream)
	if err != nil {
		return e.send(fmt.Sprintf("event: error\ndata: %q\n\n", err.Error()))
	}
	// A header starts the session (or, later in a stream, a new session
	// created under the same id after a delete).
	var line []byte
	kind := "entry"
	if dm.Entry != nil {
		ent := dm.Entry
		if e.fetch != nil {
			e.fetch.item()
			if ent, err = session.ResolveEntry(ent, e.fetch.get); err != nil {
				// The stream ends: the client resumes from the last event
				// it got (with ?refs=true to read blobs itself).
				e.send(fmt.Sprintf("event: error\ndata: {\"code\":\"unresolved\",\"message\":%q,\"lastEventId\":%d}\n\n", service.PublicMessage(err.Error()), e.last))
				return err
			}
		}
		line, err = codec.EncodeEntry(ent)
	} else {
		kind = "header"
		line, err = codec.EncodeHeader(dm.Header)
	}
	if err != nil {
		return nil
	}
	e.last = dm.Seq
	return e.write(fmt.Appendf(nil, "id: %d\nevent: %s\ndata: ", dm.Seq, kind), line, []byte("\n\n"))
}

func (g *Gateway) exists(ctx context.Context, u *userConn, id string) error {
	body := fmt.Appendf(nil, `{"session":%q}`, id)
	_, err := u.c.Raw(ctx, api.OpOpen, body)
	return err
}

// startOf reads where a stream starts: ?after= or Last-Event-ID.
func startOf(r *http.Request) (after uint64, from bool, err error) {
	for k := range r.URL.Query() {
		if k != "after" && k != "refs" {
			return 0, false, &api.Error{Code: api.CodeBadRequest, Field: "?" + k, Message: fmt.Sprintf("unknown query parameter %q", k)}
		}
	}
	v, field := r.URL.Query().Get("after"), "?after"
	if v == "" {
		v, field = r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	}
	if v == "" {
		return 0, false, nil
	}
	after, perr := strconv.ParseUint(v, 10, 64)
	if perr != nil || after >= math.MaxInt64 {
		return 0, false, &api.Error{Code: api.CodeBadRequest, Field: field, Message: fmt.Sprintf("%s must be a stream sequence, not %q", field, v)}
	}
	return after, true, nil
}
