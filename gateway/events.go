package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
	if g.limited(w, r) {
		return
	}
	id := r.PathValue("id")
	if err := session.ValidateSessionID(id); err != nil {
		writeError(w, &service.Error{Code: service.CodeInvalidSessionID, Field: "/session", Message: err.Error()}, 0)
		return
	}
	after, from, err := startOf(r)
	if err != nil {
		writeError(w, err, 0)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, errors.New("gateway: response cannot stream"), 0)
		return
	}
	select {
	case g.streams <- struct{}{}:
		defer func() { <-g.streams }()
	default:
		writeError(w, &service.Error{Code: service.CodeUnavailable, Message: fmt.Sprintf("%d event streams open: the limit", cap(g.streams))}, 0)
		return
	}
	u, release, err := g.user(r)
	if err != nil {
		writeError(w, err, 0)
		return
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	b, err := stream.New(ctx, u.nc, g.cfg.Stream)
	if err != nil {
		writeError(w, &service.Error{Code: service.CodeUnavailable, Message: err.Error()}, 0)
		return
	}
	// The session must exist now (a stream that never starts would look
	// like a quiet session).
	if err := g.exists(ctx, u, id); err != nil {
		writeError(w, err, 0)
		return
	}
	cc := jetstream.OrderedConsumerConfig{FilterSubjects: []string{b.SessionSubjects(id)}, DeliverPolicy: jetstream.DeliverNewPolicy}
	if from {
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cons, err := b.Stream().OrderedConsumer(ctx, cc)
	if err != nil {
		writeError(w, &service.Error{Code: service.CodeUnavailable, Message: err.Error()}, 0)
		return
	}
	msgs := make(chan jetstream.Msg, 64)
	cctx, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case msgs <- m:
		case <-ctx.Done():
		}
	})
	if err != nil {
		writeError(w, &service.Error{Code: service.CodeUnavailable, Message: err.Error()}, 0)
		return
	}
	defer cctx.Stop()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": sessionlog events of "+id+"\n\n")
	flusher.Flush()
	beat := time.NewTicker(g.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.ctx.Done():
			return
		case <-beat.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case m := <-msgs:
			meta, err := m.Metadata()
			if err != nil {
				continue
			}
			dm, err := b.Decode(m.Subject(), m.Data(), meta.Sequence.Stream)
			if err != nil {
				fmt.Fprintf(w, "event: error\ndata: %q\n\n", err.Error())
				flusher.Flush()
				continue
			}
			// A header starts the session (or, later in a stream, a new
			// session created under the same id after a delete).
			var line []byte
			kind := "entry"
			if dm.Entry != nil {
				line, err = codec.EncodeEntry(dm.Entry)
			} else {
				kind = "header"
				line, err = codec.EncodeHeader(dm.Header)
			}
			if err != nil {
				continue
			}
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", dm.Seq, kind, line)
		}
		flusher.Flush()
	}
}

func (g *Gateway) exists(ctx context.Context, u *userConn, id string) error {
	body := fmt.Appendf(nil, `{"session":%q}`, id)
	_, err := u.c.Raw(ctx, service.OpOpen, body)
	return err
}

// startOf reads where a stream starts: ?after= or Last-Event-ID.
func startOf(r *http.Request) (after uint64, from bool, err error) {
	for k := range r.URL.Query() {
		if k != "after" {
			return 0, false, &service.Error{Code: service.CodeBadRequest, Field: "?" + k, Message: fmt.Sprintf("unknown query parameter %q", k)}
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
	if perr != nil {
		return 0, false, &service.Error{Code: service.CodeBadRequest, Field: field, Message: fmt.Sprintf("%s must be a stream sequence, not %q", field, v)}
	}
	return after, true, nil
}
