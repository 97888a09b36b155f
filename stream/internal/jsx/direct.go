package jsx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Reads go through the stream's direct get, asking for a batch of a
// session's messages at a time. Unlike a consumer, a direct get involves
// no meta leader (creating a consumer is a proposal to the meta group, so
// every read used to stall while a lost meta leader was replaced) and no
// state on the server: it is one request answered by whichever replica
// takes it. A replica may be behind the leader; callers that must see the
// latest write compare with the leader's last sequence (the stream package's Store.CatchUp).
//
// orbit.go's jetstreamext.GetBatch asks the same, but ends its iteration
// silently on a timeout, which would make a read cut short look complete,
// and reports "no responders" as an old server; hence this one.

const (
	// readBatch and readBatchBytes bound one response: at most this many
	// messages, stopping after the one that passes this many bytes.
	readBatch      = 1000
	readBatchBytes = 8 << 20
)

// numPendingHeader carries, on each message of a batch and on its end,
// how many matching messages follow.
const numPendingHeader = "Nats-Num-Pending"

// firstReplyWait is how long a direct get waits for its first reply
// before it is sent again. A replica answers from memory or its page
// cache within milliseconds.
const firstReplyWait = 250 * time.Millisecond

// ErrNoMessages is a batch that found no message from its start on.
var ErrNoMessages = errors.New("stream: no messages")

// BatchEnd is what the server says after the last message of a batch.
type BatchEnd struct {
	Pending uint64 // matching messages after the batch
}

// GetBatch asks for up to readBatch messages on subject of stream from
// sequence from on, calling fn for each in order; a batch that finds none
// at all is ErrNoMessages.
func (r *Requester) GetBatch(ctx context.Context, stream, subject string, from uint64, fn func(m *jetstream.RawStreamMsg, pending uint64) error) (BatchEnd, error) {
	return r.GetBatchMax(ctx, stream, subject, from, readBatchBytes, fn)
}

// EachOf calls fn with every message on subject of stream, in order,
// batch after batch until none is pending (none at all: no call).
func (r *Requester) EachOf(ctx context.Context, stream, subject string, fn func(m *jetstream.RawStreamMsg) error) error {
	for from := uint64(1); ; {
		end, err := r.GetBatch(ctx, stream, subject, from, func(m *jetstream.RawStreamMsg, _ uint64) error {
			from = m.Sequence + 1
			return fn(m)
		})
		switch {
		case errors.Is(err, ErrNoMessages):
			return nil
		case err != nil:
			return err
		case end.Pending == 0:
			return nil
		}
	}
}

// GetBatchMax is GetBatch with a bound of its own on the bytes of the
// answer (at least one message comes whatever its size).
func (r *Requester) GetBatchMax(ctx context.Context, stream, subject string, from uint64, maxBytes int, fn func(m *jetstream.RawStreamMsg, pending uint64) error) (BatchEnd, error) {
	var end BatchEnd
	req := struct {
		Seq      uint64 `json:"seq"`
		NextFor  string `json:"next_by_subj"`
		Batch    int    `json:"batch"`
		MaxBytes int    `json:"max_bytes"`
	}{from, subject, readBatch, maxBytes}
	err := r.Direct(ctx, stream, req, fn, func(eob nats.Header) error {
		pending, perr := strconv.ParseUint(eob.Get(numPendingHeader), 10, 64)
		if perr != nil {
			return fmt.Errorf("stream: direct get: end of batch without a pending count: %w", jetstream.ErrInvalidJetStreamResponse)
		}
		end.Pending = pending
		return nil
	})
	return end, err
}

// Direct sends one direct-get request to stream and hands each message
// of the answer to fn, then its end (the 204 status) to done. An answer
// with no message at all is ErrNoMessages.
func (r *Requester) Direct(ctx context.Context, stream string, request any, fn func(m *jetstream.RawStreamMsg, pending uint64) error, done func(eob nats.Header) error) error {
	req, err := json.Marshal(request)
	if err != nil {
		return err
	}
	inbox := r.NC.NewRespInbox()
	sub, err := r.NC.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := r.NC.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
		return err
	}
	for first := true; ; first = false {
		wait := ctx
		if first {
			// Any replica may take the request, including one that has
			// just died or stopped: ask again (another, most likely)
			// rather than wait a whole attempt for it.
			var cancel context.CancelFunc
			wait, cancel = context.WithTimeout(ctx, firstReplyWait)
			defer cancel()
		}
		m, err := sub.NextMsgWithContext(wait)
		if err != nil {
			return err
		}
		if len(m.Data) == 0 && m.Header.Get("Status") != "" {
			switch status := m.Header.Get("Status"); {
			case status == "204":
				return done(m.Header)
			case status == "404" && first:
				return ErrNoMessages
			case status == "503":
				return nats.ErrNoResponders
			default:
				return fmt.Errorf("stream: direct get: status %s %s", status, m.Header.Get("Description"))
			}
		}
		raw, pending, err := directMsg(m)
		if err != nil {
			return err
		}
		if err := fn(raw, pending); err != nil {
			return err
		}
	}
}

// directMsg is one message of a batch response, and its pending count.
func directMsg(m *nats.Msg) (*jetstream.RawStreamMsg, uint64, error) {
	raw, err := rawOf(m)
	if err != nil {
		return nil, 0, err
	}
	pending, err := strconv.ParseUint(m.Header.Get(numPendingHeader), 10, 64)
	if err != nil {
		// A server before 2.11 answers one message and no count.
		return nil, 0, fmt.Errorf("stream: direct get: no pending count (the server must be NATS 2.11 or later): %w", jetstream.ErrInvalidJetStreamResponse)
	}
	return raw, pending, nil
}

// rawOf is the stored message a direct get's reply carries.
func rawOf(m *nats.Msg) (*jetstream.RawStreamMsg, error) {
	subject := m.Header.Get(jetstream.SubjectHeader)
	seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil || subject == "" {
		return nil, fmt.Errorf("stream: direct get: a message without subject or sequence: %w", jetstream.ErrInvalidJetStreamResponse)
	}
	return &jetstream.RawStreamMsg{Subject: subject, Sequence: seq, Header: m.Header, Data: m.Data}, nil
}

// GetSeqs asks for each message of stream from sequence lo to hi, in one
// direct get each, all sent at once, and hands those that exist to fn in
// order. A batch would do in one request, but the server counts what
// matches after the start for every batch, and on a stream keeping one
// message per subject (a key-value bucket) that count visits every
// subject: ~0.1 s a request at 100k sessions, for a page of 50.
//
// With leader set, the stream's leader answers (see leaderReply).
func (r *Requester) GetSeqs(ctx context.Context, stream string, lo, hi uint64, leader bool, fn func(m *jetstream.RawStreamMsg) error) error {
	if hi < lo {
		return nil
	}
	n := int(hi - lo + 1)
	inbox := r.NC.NewRespInbox()
	replies := make(chan *nats.Msg, n)
	sub, err := r.NC.ChanSubscribe(inbox+".*", replies)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	for seq := lo; seq <= hi; seq++ {
		req := []byte(`{"seq":` + strconv.FormatUint(seq, 10) + `}`)
		if err := r.NC.PublishRequest(getSubject(stream, leader), inbox+"."+strconv.FormatUint(seq-lo, 10), req); err != nil {
			return err
		}
	}
	got := make([]*jetstream.RawStreamMsg, n)
	for range n {
		var m *nats.Msg
		select {
		case m = <-replies:
		case <-ctx.Done():
			return fmt.Errorf("stream: direct get: %w", ctx.Err())
		}
		msg, err := reply(m, leader)
		if err != nil {
			return err
		}
		if msg == nil {
			continue // deleted
		}
		if msg.Sequence < lo || msg.Sequence > hi {
			return fmt.Errorf("stream: direct get: sequence %d asked for %d..%d: %w", msg.Sequence, lo, hi, jetstream.ErrInvalidJetStreamResponse)
		}
		got[msg.Sequence-lo] = msg
	}
	for _, m := range got {
		if m != nil {
			if err := fn(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// GetEach asks for the messages of stream from sequence lo to hi one
// after another, each request for the next message after the last one
// found (the server steps over deleted sequences), handing each to fn.
func (r *Requester) GetEach(ctx context.Context, stream string, lo, hi uint64, leader bool, fn func(m *jetstream.RawStreamMsg) error) error {
	type next struct {
		Seq     uint64 `json:"seq"`
		NextFor string `json:"next_by_subj"`
	}
	for from := lo; from <= hi; {
		m, err := r.GetOne(ctx, stream, next{from, ">"}, leader)
		if err != nil || m == nil || m.Sequence > hi {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
		from = m.Sequence + 1
	}
	return nil
}

// GetOne sends one direct get for a single message and returns it, or nil
// when the stream has none to answer with.
func (r *Requester) GetOne(ctx context.Context, stream string, request any, leader bool) (*jetstream.RawStreamMsg, error) {
	req, err := json.Marshal(request)
	if err != nil {
		return nil, err
	}
	m, err := r.NC.RequestWithContext(ctx, getSubject(stream, leader), req)
	if err != nil {
		return nil, err
	}
	return reply(m, leader)
}

// LastOf returns the last message on subject of stream as the stream's
// leader holds it (every write acknowledged before), nil if there is
// none; a request whose outcome is unknown is sent again.
func (r *Requester) LastOf(ctx context.Context, stream, subject string) (m *jetstream.RawStreamMsg, err error) {
	err = r.Resend(ctx, func(ctx context.Context) (err error) {
		m, err = r.GetOne(ctx, stream, map[string]string{"last_by_subj": subject}, true)
		return err
	}, nil)
	return m, err
}

// A direct get is answered by any replica, which may not hold the last
// writes yet; a get from the leader (the stream API's) holds every write
// acknowledged before it. Listings read the newest index records from the
// leader, the rest by direct get.
func getSubject(stream string, leader bool) string {
	if leader {
		return "$JS.API.STREAM.MSG.GET." + stream
	}
	return "$JS.API.DIRECT.GET." + stream
}

func reply(m *nats.Msg, leader bool) (*jetstream.RawStreamMsg, error) {
	if leader {
		return leaderReply(m)
	}
	return directReply(m)
}

// leaderReply is the message of a stream API get's reply, or nil when the
// stream has none to answer with; its time is set as the header a direct
// get carries.
func leaderReply(m *nats.Msg) (*jetstream.RawStreamMsg, error) {
	var r struct {
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Header  []byte    `json:"hdrs"`
			Data    []byte    `json:"data"`
			Time    time.Time `json:"time"`
		} `json:"message"`
	}
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return nil, nats.ErrNoResponders
	}
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return nil, fmt.Errorf("stream: get: %w: %w", jetstream.ErrInvalidJetStreamResponse, err)
	}
	switch {
	case r.Error != nil && r.Error.Code == 404:
		return nil, nil
	case r.Error != nil:
		return nil, fmt.Errorf("stream: get: %d %s", r.Error.Code, r.Error.Description)
	case r.Message == nil || r.Message.Subject == "":
		return nil, fmt.Errorf("stream: get: a reply without a message: %w", jetstream.ErrInvalidJetStreamResponse)
	}
	hdr := nats.Header{}
	if len(r.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(r.Message.Header)
		if err != nil {
			return nil, fmt.Errorf("stream: get: headers: %w", err)
		}
		hdr = h
	}
	hdr.Set(jetstream.TimeStampHeaer, r.Message.Time.UTC().Format(time.RFC3339Nano))
	return &jetstream.RawStreamMsg{Subject: r.Message.Subject, Sequence: r.Message.Seq, Header: hdr, Data: r.Message.Data}, nil
}

// directReply is the message of a single direct get's reply, or nil when
// the server found none (404).
func directReply(m *nats.Msg) (*jetstream.RawStreamMsg, error) {
	switch status := m.Header.Get("Status"); {
	case len(m.Data) == 0 && status == "404":
		return nil, nil
	case len(m.Data) == 0 && status == "503":
		return nil, nats.ErrNoResponders
	case len(m.Data) == 0 && status != "":
		return nil, fmt.Errorf("stream: direct get: status %s %s", status, m.Header.Get("Description"))
	}
	return rawOf(m)
}
