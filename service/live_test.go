package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// live is one writer's view of a generation: start, puts and the end,
// each after the last.
type live struct {
	t      *testing.T
	f      *fixture
	id     string
	writer string
	seq    uint64
}

func (l *live) start() api.LiveReply {
	var r api.LiveReply
	l.f.call(l.t, api.OpLiveStart, api.LiveStartRequest{Stream: l.id, Writer: l.writer}, &r)
	if r.Started {
		l.seq = r.Seq
	}
	return r
}

func (l *live) put(chunks ...string) (api.LiveReply, error) {
	var r api.LiveReply
	err := l.f.callErr2(api.OpLivePut, api.LivePutRequest{LiveWriteRequest: api.LiveWriteRequest{Stream: l.id, Writer: l.writer, After: l.seq}, Chunks: chunks}, &r)
	if err == nil && r.State == api.LiveRunning {
		l.seq = r.Seq
	}
	return r, err
}

func (l *live) end() api.LiveReply {
	var r api.LiveReply
	l.f.call(l.t, api.OpLiveEnd, api.LiveWriteRequest{Stream: l.id, Writer: l.writer, After: l.seq}, &r)
	return r
}

func (l *live) state() api.LiveReply {
	var r api.LiveReply
	l.f.call(l.t, api.OpLiveState, api.LiveRequest{Stream: l.id}, &r)
	return r
}

// records reads a generation's records as a reader does, with an
// ordered consumer of its subject from the first: kind and chunks of
// each.
func records(t *testing.T, f *fixture, r api.LiveReply) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, _ := jetstream.New(newConn(t))
	c, err := js.OrderedConsumer(ctx, r.JetStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{r.Subject}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for range info.NumPending {
		m, err := c.Next(jetstream.FetchContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		var chunks []string
		if m.Headers().Get("Sessionlog-Live") == "chunks" {
			if err := json.Unmarshal(m.Data(), &chunks); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, m.Headers().Get("Sessionlog-Live")+fmt.Sprint(chunks))
	}
	return out
}

// A generation has one writer: a second start is told it runs, a write
// that does not continue the last is a conflict, and readers get the
// records in order, ending at the end.
func TestLiveOneWriter(t *testing.T) {
	f := start(t, nil)
	a := &live{t: t, f: f, id: "chat 1 / ü — any string", writer: "A"}
	if r := a.start(); !r.Started || r.State != api.LiveRunning || r.Seq == 0 || r.Subject == "" {
		t.Fatalf("start: %+v", r)
	}
	// A resend of the same start is still this writer's.
	if r := a.start(); !r.Started {
		t.Fatalf("the start sent again: %+v", r)
	}
	b := &live{t: t, f: f, id: a.id, writer: "B\r\nNats-Msg-Id: forged"}
	if r := b.start(); r.Started || r.State != api.LiveRunning {
		t.Fatalf("a second writer's start: %+v", r)
	}
	if _, err := a.put("he", "llo"); err != nil {
		t.Fatal(err)
	}
	b.seq = a.seq - 1
	if _, err := b.put("intruder"); !isCode(err, api.CodeConflict) {
		t.Fatalf("a put after an older record: %v", err)
	}
	prev := a.seq
	if _, err := a.put(" world"); err != nil {
		t.Fatal(err)
	}
	// A put sent again after it landed (its answer lost) is that put,
	// stored once.
	var again api.LiveReply
	if err := f.callErr2(api.OpLivePut, api.LivePutRequest{LiveWriteRequest: api.LiveWriteRequest{Stream: a.id, Writer: a.writer, After: prev}, Chunks: []string{" world"}}, &again); err != nil || again.Seq != a.seq {
		t.Fatalf("the last put sent again: %+v %v, want its own record %d", again, err, a.seq)
	}
	if r := a.end(); r.State != api.LiveDone {
		t.Fatalf("end: %+v", r)
	}
	if r := a.end(); r.State != api.LiveDone {
		t.Fatalf("the end sent again: %+v", r)
	}
	if r, err := a.put("after the end"); err != nil || r.State != api.LiveDone {
		t.Fatalf("a put after the end: %+v %v", r, err)
	}
	got := records(t, f, a.state())
	if want := "start[] chunks[he llo] chunks[ world] done[]"; strings.Join(got, " ") != want {
		t.Fatalf("records: %v, want %s", got, want)
	}
	if r := b.start(); r.Started || r.State != api.LiveDone {
		t.Fatalf("a start after the end: %+v", r)
	}
}

// A stop ends a generation for everyone: the writer's next put is told
// so and stores nothing, and readers end at the stop.
func TestLiveStop(t *testing.T) {
	f := start(t, nil)
	a := &live{t: t, f: f, id: "stopped", writer: "w"}
	a.start()
	if _, err := a.put("one"); err != nil {
		t.Fatal(err)
	}
	var r api.LiveReply
	f.call(t, api.OpLiveStop, api.LiveRequest{Stream: a.id}, &r)
	if r.State != api.LiveStopped {
		t.Fatalf("stop: %+v", r)
	}
	f.call(t, api.OpLiveStop, api.LiveRequest{Stream: a.id}, &r)
	if r.State != api.LiveStopped {
		t.Fatalf("a second stop: %+v", r)
	}
	if r, err := a.put("two"); err != nil || r.State != api.LiveStopped {
		t.Fatalf("a put after the stop: %+v %v", r, err)
	}
	if r := a.end(); r.State != api.LiveStopped {
		t.Fatalf("an end after the stop: %+v", r)
	}
	if got := strings.Join(records(t, f, a.state()), " "); got != "start[] chunks[one] stop[]" {
		t.Fatalf("records: %s", got)
	}
	if err := f.callErr(api.OpLiveStop, api.LiveRequest{Stream: "never started"}); !isCode(err, api.CodeNotFound) {
		t.Fatalf("stop of nothing: %v", err)
	}
}

// A generation's records go at their TTL: it is then none, and may be
// started again.
func TestLiveExpires(t *testing.T) {
	f := start(t, nil)
	var r api.LiveReply
	f.call(t, api.OpLiveStart, api.LiveStartRequest{Stream: "short", Writer: "w", TTLMs: 1000}, &r)
	f.call(t, api.OpLiveEnd, api.LiveWriteRequest{Stream: "short", Writer: "w", After: r.Seq, TTLMs: 1000}, &r)
	if r.State != api.LiveDone {
		t.Fatalf("end: %+v", r)
	}
	sessiontest.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		f.call(t, api.OpLiveState, api.LiveRequest{Stream: "short"}, &r)
		if r.State != api.LiveNone {
			return fmt.Errorf("state %s", r.State)
		}
		return nil
	})
	if err := f.callErr2(api.OpLiveStart, api.LiveStartRequest{Stream: "short", Writer: "w2"}, &r); err != nil || !r.Started {
		t.Fatalf("started again: %+v %v", r, err)
	}
}

// Requests the generations cannot take are refused, naming what is wrong.
func TestLiveRefusals(t *testing.T) {
	f := start(t, nil)
	var r api.LiveReply
	f.call(t, api.OpLiveStart, api.LiveStartRequest{Stream: "ok", Writer: "w"}, &r)
	for _, tt := range []struct {
		op, body, field string
		code            api.Code
	}{
		{api.OpLiveStart, `{"stream":"","writer":"w"}`, "/stream", api.CodeBadRequest},
		{api.OpLiveStart, `{"stream":"` + strings.Repeat("x", 513) + `","writer":"w"}`, "/stream", api.CodeBadRequest},
		{api.OpLiveStart, `{"stream":"x"}`, "/writer", api.CodeBadRequest},
		{api.OpLiveStart, `{"stream":"x","writer":"w","ttlMs":5}`, "/ttlMs", api.CodeBadRequest},
		{api.OpLiveStart, `{"stream":"x","writer":"w","ttlMs":999999999999}`, "/ttlMs", api.CodeBadRequest},
		// Milliseconds whose nanoseconds wrap past 2^64 to two seconds.
		{api.OpLiveStart, `{"stream":"x","writer":"w","ttlMs":18446744075709}`, "/ttlMs", api.CodeBadRequest},
		{api.OpLiveStart, `{"stream":"x","writer":"w","ttlMs":-18446744071709}`, "/ttlMs", api.CodeBadRequest},
		{api.OpLivePut, `{"stream":"ok","writer":"w","after":` + fmt.Sprint(r.Seq) + `,"chunks":[]}`, "/chunks", api.CodeBadRequest},
		{api.OpLivePut, `{"stream":"ok","writer":"w","chunks":["a"]}`, "/after", api.CodeBadRequest},
		{api.OpLivePut, `{"stream":"ok","writer":"w","after":1,"chunks":[1]}`, "", api.CodeBadRequest},
		{api.OpLivePut, `{"stream":"gone","writer":"w","after":1,"chunks":["a"]}`, "", api.CodeNotFound},
		{api.OpLiveEnd, `{"stream":"gone","writer":"w","after":1}`, "", api.CodeNotFound},
		{api.OpLiveState, `{"stream":""}`, "/stream", api.CodeBadRequest},
	} {
		err := f.raw(tt.op, tt.body)
		var pe *api.Error
		if !errors.As(err, &pe) || pe.Code != tt.code || (tt.field != "" && pe.Field != tt.field) {
			t.Errorf("%s %.80s: %v (%+v), want %s at %s", tt.op, tt.body, err, pe, tt.code, tt.field)
		}
	}
	// The generation refused nothing into itself.
	if got := strings.Join(records(t, f, r), " "); got != "start[]" {
		t.Fatalf("records: %s", got)
	}
}

// A tenant's user may read generations (a consumer each, on the tenant's
// generations stream) but not write them past the service, nor see
// another tenant's; and the consumers it holds on the stream are bounded
// apart from those on the sessions' (MaxLiveConsumersPerUser): past the
// bound, the service deletes them.
func TestLiveTenants(t *testing.T) {
	tt := startTenants(t)
	alice, errs := tt.user(t, nats.UserInfo("alice", "alice-pw"))
	bob, _ := tt.user(t, nats.UserInfo("bob", "bob-pw"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ac, bc := api.NewClient(alice, api.DefaultSubject), api.NewClient(bob, api.DefaultSubject)
	var r api.LiveReply
	if err := ac.Call(ctx, api.OpLiveStart, api.LiveStartRequest{Stream: "g", Writer: "w"}, &r); err != nil || !r.Started {
		t.Fatalf("start: %+v %v", r, err)
	}
	var br api.LiveReply
	if err := bc.Call(ctx, api.OpLiveState, api.LiveRequest{Stream: "g"}, &br); err != nil || br.State != api.LiveNone {
		t.Fatalf("bob sees alice's generation: %+v %v", br, err)
	}
	// Writing a record directly is refused: every write goes through the
	// service.
	js, _ := jetstream.New(alice)
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	defer pcancel()
	if _, err := js.Publish(pctx, strings.TrimSuffix(r.Subject, "*")+"d", []byte(`["forged"]`)); err == nil {
		t.Fatal("alice published a record past the service")
	}
	drainErrs(errs)
	const bound = 256 // service.DefaultConfig's MaxLiveConsumersPerUser
	for i := range bound + 8 {
		if _, err := js.CreateConsumer(ctx, r.JetStream, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, FilterSubject: r.Subject, InactiveThreshold: time.Hour}); err != nil {
			t.Fatalf("consumer %d: %v", i, err)
		}
	}
	sessiontest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		s, err := js.Stream(ctx, r.JetStream)
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if n := info.State.Consumers; n > bound {
			return fmt.Errorf("%d consumers on %s, past the bound of %d", n, r.JetStream, bound)
		}
		return nil
	})
}

func drainErrs(errs <-chan error) {
	for {
		select {
		case <-errs:
		default:
			return
		}
	}
}

// Ids and tokens are anyone's strings: line breaks, header syntax, any
// text; each is its own generation, and a resend of a start with such a
// token is still that writer's.
func TestLiveHostileStrings(t *testing.T) {
	f := start(t, nil)
	for _, id := range []string{"a\r\nNats-Msg-Id: x", "a\r\n", "a", "\x00\u202e ünïcödé", "sessions.>", "*"} {
		l := &live{t: t, f: f, id: id, writer: "w\r\nSessionlog-Live: done"}
		if r := l.start(); !r.Started {
			t.Fatalf("start %q: %+v", id, r)
		}
		if r := l.start(); !r.Started {
			t.Fatalf("the start of %q sent again: %+v", id, r)
		}
		if _, err := l.put(id); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(records(t, f, l.state()), " "); got != "start[] chunks["+id+"]" {
			t.Fatalf("%q: records %q", id, got)
		}
		// A token a header would turn into this one is another writer.
		other := &live{t: t, f: f, id: id, writer: "w  Sessionlog-Live: done"}
		if r := other.start(); r.Started {
			t.Fatalf("%q: a second writer, its token the first's with its line break as spaces, started it too: %+v", id, r)
		}
	}
}

// A generation is written by the writer that started it alone (issue 68):
// another token that read the last sequence from livestate cannot put
// into it or end it; a second put or an end at a sequence already used is
// a conflict, not an answer of 200 with nothing stored; every accepted
// end shows in livestate.
func TestLiveWritesAreTheWritersOwn(t *testing.T) {
	f := start(t, nil)
	a := &live{t: t, f: f, id: "gen", writer: "A"}
	if r := a.start(); !r.Started {
		t.Fatalf("start: %+v", r)
	}
	if _, err := a.put("one"); err != nil {
		t.Fatal(err)
	}
	// An intruder with the current sequence, as livestate gives it.
	b := &live{t: t, f: f, id: a.id, writer: "B", seq: a.state().Seq}
	if _, err := b.put("intruder"); !isCode(err, api.CodeConflict) {
		t.Fatalf("another writer's put at the last sequence: %v", err)
	}
	var ended api.LiveReply
	if err := f.callErr2(api.OpLiveEnd, api.LiveWriteRequest{Stream: a.id, Writer: "B", After: b.seq}, &ended); !isCode(err, api.CodeConflict) {
		t.Fatalf("another writer's end: %+v %v", ended, err)
	}
	// The writer's own second put, and its end, at a sequence used.
	used := a.seq
	if _, err := a.put("two"); err != nil {
		t.Fatal(err)
	}
	var again api.LiveReply
	if err := f.callErr2(api.OpLivePut, api.LivePutRequest{LiveWriteRequest: api.LiveWriteRequest{Stream: a.id, Writer: a.writer, After: used}, Chunks: []string{"other"}}, &again); !isCode(err, api.CodeConflict) {
		t.Fatalf("another put at a used sequence: %+v %v", again, err)
	}
	if err := f.callErr2(api.OpLiveEnd, api.LiveWriteRequest{Stream: a.id, Writer: a.writer, After: used}, &again); !isCode(err, api.CodeConflict) {
		t.Fatalf("an end at a used sequence: %+v %v", again, err)
	}
	if r := a.state(); r.State != api.LiveRunning {
		t.Fatalf("after the refused end: %+v", r)
	}
	if r := a.end(); r.State != api.LiveDone || a.state().State != api.LiveDone {
		t.Fatalf("the writer's end: %+v, then %+v", r, a.state())
	}
	if got := records(t, f, a.state()); strings.Join(got, " ") != "start[] chunks[one] chunks[two] done[]" {
		t.Fatalf("records: %v", got)
	}
}
