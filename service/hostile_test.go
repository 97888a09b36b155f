package service_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// storedSubjects are reply subjects that name stored data: an answer
// published there would be an entry, a header or an index record.
func storedSubjects(sc stream.Config, id string) []string {
	return []string{
		sc.Prefix + "." + id, sc.Prefix + "." + id + ".message", sc.Prefix + "." + id + ".session",
		"$KV." + sc.IndexBucket() + "." + id, "$O." + sc.SnapshotBucket() + ".M.x",
		"sessionlog.v1.create", "", "_INBOX.a.*", "_INBOX.>", "_INBOX.",
	}
}

// A request whose reply subject is a stored subject (or no inbox at all)
// is neither answered nor carried out, on a node without tenants too.
func TestReplySubjectsOutsideInboxesAreRefused(t *testing.T) {
	f := start(t, nil)
	ctx := t.Context()
	f.call(t, api.OpCreate, api.CreateRequest{ID: "victim"}, nil)
	var before api.SessionReply
	f.call(t, api.OpOpen, api.SessionRequest{Session: "victim"}, &before)
	cfg := f.b.Config()
	for _, reply := range storedSubjects(cfg, "victim") {
		for _, op := range []string{api.OpCreate, api.OpOpen, api.OpAppend} {
			body := `{"id":"taken"}`
			if op != api.OpCreate {
				body = `{"session":"victim","entries":[` + userHi + `]}`
				if op == api.OpOpen {
					body = `{"session":"victim"}`
				}
			}
			if err := nc.PublishMsg(&nats.Msg{Subject: f.cfg.Subject + "." + op, Reply: reply, Data: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := int64(3 * len(storedSubjects(cfg, "victim")))
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if got := service.RefusedReplies(f.svc); got != want {
			return fmt.Errorf("refused %d of %d", got, want)
		}
		return nil
	})
	var after api.SessionReply
	f.call(t, api.OpOpen, api.SessionRequest{Session: "victim"}, &after)
	if after.Sequence != before.Sequence || after.Session.Entries != 0 {
		t.Fatalf("a refused request changed the session: %+v → %+v", before, after)
	}
	if err := f.callErr(api.OpOpen, api.SessionRequest{Session: "taken"}); err == nil {
		t.Fatal("a create with a stored reply subject was carried out")
	}
	// Nothing was stored for either session (reads write barriers
	// elsewhere in the stream: its own last sequence moves on).
	if m, err := f.b.StreamOf("victim").GetLastMsgForSubject(ctx, f.b.SessionSubjects("victim")); err != nil || m.Sequence != before.Sequence {
		t.Fatalf("victim's last message moved from %d: %+v, %v", before.Sequence, m, err)
	}
	if _, err := f.b.StreamOf("taken").GetLastMsgForSubject(ctx, f.b.SessionSubjects("taken")); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("a message of session taken was stored: %v", err)
	}
}

// With tenants the server enforces it too: the service answers on a
// connection that may publish only to inboxes, so even a service
// configured to answer anywhere cannot write a stored subject; and a
// tenant user can create or change no stream (the dead-letter stream
// capturing the service's requests, once).
func TestTenantUsersCannotWriteAroundTheService(t *testing.T) {
	tt := startTenants(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A service that would answer anywhere, on the responder connection.
	rc, err := tt.node.ConnectTenantResponder("acme")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	sc, err := tt.node.ConnectTenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	b, err := stream.New(ctx, sc, tt.scfg)
	if err != nil {
		t.Fatal(err)
	}
	careful := api.NewClient(sc, "sessionlog.v1")
	if err := careful.Call(ctx, api.OpCreate, api.CreateRequest{ID: "victim"}, nil); err != nil {
		t.Fatal(err)
	}
	cfg := service.DefaultConfig(sessiontest.TestConfig())
	// The same subject, another queue group: every request reaches both
	// the real service (which drops it) and this one (which answers).
	cfg.QueueGroup = "careless"
	cfg.ReplyPrefixes = []string{"_INBOX.", tt.scfg.Prefix + ".", "$KV."}
	careless, err := service.Start(ctx, rc, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer careless.Close(ctx)
	// The victim's last message (reads write barriers elsewhere in the
	// stream, so the stream's own last sequence moves on).
	last := func() uint64 {
		m, err := b.StreamOf("victim").GetLastMsgForSubject(ctx, b.SessionSubjects("victim"))
		if err != nil {
			t.Fatal(err)
		}
		return m.Sequence
	}
	seq := last()

	alice, errs := tt.user(t, nats.UserInfo("alice", "alice-pw"))
	for _, reply := range []string{b.SessionSubjects("victim"), tt.scfg.Prefix + ".victim.session"} {
		if err := alice.PublishMsg(&nats.Msg{Subject: "sessionlog.v1.open", Reply: reply, Data: []byte(`{"session":"victim"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	// The careless service answered (the server counts its requests) …
	sessiontest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		for _, e := range careless.Stats().Endpoints {
			if e.Name == "open" && e.NumRequests >= 2 {
				return nil
			}
		}
		return fmt.Errorf("requests not yet handled")
	})
	// … and nothing reached the stream.
	if got := last(); got != seq {
		t.Fatalf("a reply reached the stream: last sequence %d, was %d", got, seq)
	}
	var open api.SessionReply
	if err := careful.Call(ctx, api.OpOpen, api.SessionRequest{Session: "victim"}, &open); err != nil || open.Session.Entries != 0 {
		t.Fatalf("victim after the attempt: %+v, %v", open, err)
	}

	// Streams: a user can neither create one nor change the dead letters'.
	js, err := jetstream.New(alice)
	if err != nil {
		t.Fatal(err)
	}
	for _, attempt := range []func(context.Context) error{
		func(ctx context.Context) error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CAPTURE", Subjects: []string{"sessionlog.v1.>"}})
			return err
		},
		func(ctx context.Context) error {
			_, err := js.UpdateStream(ctx, jetstream.StreamConfig{Name: tt.scfg.Stream + "_DLQ", Subjects: []string{"sessionlog.v1.>"}})
			return err
		},
		func(ctx context.Context) error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: tt.scfg.Stream + "_DLQ", Subjects: []string{"sessionlog.v1.>"}})
			return err
		},
	} {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := attempt(actx)
		cancel()
		if err == nil {
			t.Fatal("a tenant user created or changed a stream")
		}
	}
	refused(t, errs, "$JS.API.STREAM.CREATE")
	// The service still answers requests (nothing captured them).
	bob, _ := tt.user(t, nats.UserInfo("bob", "bob-pw"))
	if err := api.NewClient(bob, "sessionlog.v1").Call(ctx, api.OpList, api.ListRequest{}, nil); err != nil {
		t.Fatalf("service after the attempts: %v", err)
	}
	if err := api.NewClient(alice, "sessionlog.v1").Call(ctx, api.OpList, api.ListRequest{}, nil); err != nil {
		t.Fatalf("service after the attempts: %v", err)
	}
}

// Waits have slots of their own: clients holding every one of them delay
// no other request, one client cannot hold them all, and the next wait is
// refused at once. A timeout near MaxInt64 is the service's longest wait,
// not an overflow.
func TestWaitsNeverStarveOtherRequests(t *testing.T) {
	f := start(t, func(c *service.Config) {
		c.MaxWaits, c.MaxWaitsPerClient, c.MaxInFlight, c.MaxWait = 8, 6, 2, time.Second
		unlimited(c)
	})
	f.call(t, api.OpCreate, api.CreateRequest{ID: "w"}, nil)
	other := newClient(t, f.cfg.Subject)
	var done atomic.Int32
	var wg sync.WaitGroup
	hold := func(c *api.Client, n int) {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = c.Call(t.Context(), api.OpWait, api.WaitRequest{Session: "w", Sequence: 1 << 40, TimeoutMs: 1<<63 - 1}, nil)
				done.Add(1)
			}()
		}
	}
	inFlight := func(want int) {
		sessiontest.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
			if n := service.WaitsInFlight(f.svc); n != want {
				return fmt.Errorf("%d waits in flight, want %d", n, want)
			}
			return nil
		})
	}
	refused := func(c *api.Client, what string) {
		t.Helper()
		err := c.Call(t.Context(), api.OpWait, api.WaitRequest{Session: "w", Sequence: 1 << 40}, nil)
		var pe *api.Error
		if !errors.As(err, &pe) || pe.Code != api.CodeRateLimited || pe.RetryAfterMs == 0 || !strings.Contains(pe.Message, what) {
			t.Fatalf("a wait past the bound: %v (want rate_limited, %q)", err, what)
		}
	}
	hold(f.c, 6)
	inFlight(6)
	refused(f.c, "for this client") // its own bound
	hold(other, 2)                  // another client still may
	inFlight(8)
	refused(other, "waits in flight: the limit") // the service's bound
	for range 10 {
		f.call(t, api.OpTree, api.SessionRequest{Session: "w"}, nil)
	}
	if n := done.Load(); n != 0 {
		t.Fatalf("%d waits ended before the other requests were served: they were not held", n)
	}
	wg.Wait()
	err := f.callErr(api.OpWait, api.WaitRequest{Session: "w", Sequence: 1 << 40, TimeoutMs: 1<<63 - 1})
	var pe *api.Error
	if !errors.As(err, &pe) || pe.Code != api.CodeTimeout || !strings.Contains(pe.Message, "within 1s") {
		t.Fatalf("wait with timeoutMs near MaxInt64: %v", err)
	}
}

// A tenant user creating consumers without end is held to its bound: the
// ones past it are deleted as they appear, and the service (whose reads
// need consumers of the same stream) keeps answering.
func TestConsumersPerUserAreBounded(t *testing.T) {
	sessiontest.EachLayout(t, testConsumersPerUserAreBounded)
}

func testConsumersPerUserAreBounded(t *testing.T, partitions int) {
	tt := startTenantsOn(t, partitions)
	streams := tt.scfg.Streams() // consumers go round the partitions
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice, _ := tt.user(t, nats.UserInfo("alice", "alice-pw"))
	js, err := jetstream.New(alice)
	if err != nil {
		t.Fatal(err)
	}
	const made, bound = 80, 64 // service.DefaultConfig's bound
	for i := range made {
		_, err := js.CreateConsumer(ctx, streams[i%len(streams)], jetstream.ConsumerConfig{Durable: fmt.Sprintf("hog%03d", i), AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatalf("consumer %d: %v", i, err)
		}
	}
	count := func() int {
		n := 0
		for _, name := range streams {
			st, err := js.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			names := st.ConsumerNames(ctx)
			for name := range names.Name() {
				if strings.HasPrefix(name, "hog") {
					n++
				}
			}
		}
		return n
	}
	sessiontest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if n := count(); n != bound {
			return fmt.Errorf("alice holds %d consumers, want %d", n, bound)
		}
		return nil
	})
	// The first ones are kept (her replicas are not disturbed).
	if _, err := js.Consumer(ctx, streams[0], "hog000"); err != nil {
		t.Fatalf("the first consumer: %v", err)
	}
	svc := api.NewClient(alice, "sessionlog.v1")
	if err := svc.Call(ctx, api.OpCreate, api.CreateRequest{ID: "after"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := svc.Call(ctx, api.OpContext, api.ContextRequest{Session: "after"}, nil); err != nil {
		t.Fatalf("the service after the flood of consumers: %v", err)
	}
	// Deleting her own frees room again.
	if err := js.DeleteConsumer(ctx, streams[0], "hog000"); err != nil {
		t.Fatal(err)
	}
	sessiontest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if _, err := js.CreateConsumer(ctx, streams[0], jetstream.ConsumerConfig{Durable: "again", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			return err
		}
		if _, err := js.Consumer(ctx, streams[0], "again"); err != nil {
			return err
		}
		return nil
	})
}
