package service_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/service/servicetest"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/tracker"
)

// tenants is a node with two tenants, acme (a password user and an nkey
// user) and globex.
type tenants struct {
	*servicetest.Tenants
	nkey nkeys.KeyPair
	scfg stream.Config
	node *cluster.Node
}

func startTenants(t *testing.T) *tenants {
	t.Helper()
	return startTenantsOn(t, 1)
}

// startTenantsOn is startTenants with streams of that many partitions.
func startTenantsOn(t *testing.T, partitions int) *tenants {
	t.Helper()
	scfg := stream.DefaultConfig()
	scfg.Partitions = partitions
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	ts := servicetest.StartTenantsWith(t, scfg,
		cluster.Tenant{Name: "acme", Users: []cluster.User{{Name: "alice", Password: "alice-pw"}, {NKey: pub}}},
		cluster.Tenant{Name: "globex", Users: []cluster.User{{Name: "bob", Password: "bob-pw"}}},
	)
	return &tenants{Tenants: ts, nkey: kp, scfg: ts.Stream, node: ts.Node}
}

// user connects as a tenant user; async errors (permission violations)
// arrive on the returned channel.
func (tt *tenants) user(t *testing.T, opts ...nats.Option) (*nats.Conn, <-chan error) {
	t.Helper()
	errs := make(chan error, 64)
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	}))
	nc, err := nats.Connect(tt.node.ClientURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// refused waits for a permission violation naming subject.
func refused(t *testing.T, errs <-chan error, subject string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case err := <-errs:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), subject) {
				return
			}
		case <-timeout:
			t.Fatalf("no permission violation for %s", subject)
		}
	}
}

// refusedRequest runs call, a request the server's permissions refuse
// (so nothing answers it), until the permission error for subject comes,
// then ends it: it must not have succeeded. No timeout is waited out.
func refusedRequest(t *testing.T, ctx context.Context, errs <-chan error, subject string, call func(ctx context.Context) error) {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- call(cctx) }()
	refused(t, errs, subject)
	cancel()
	if err := <-done; err == nil {
		t.Fatalf("a request on %s succeeded", subject)
	}
}

const compaction = `{"type":"compaction","summary":"secret plans","firstKeptEntryId":"%s","tokensBefore":100}`

// Every path from one tenant's credentials towards another tenant's
// sessions is refused or leads only to the tenant's own data.
func TestTenantIsolation(t *testing.T) {
	tt := startTenants(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Credentials: none, or wrong, get no connection at all.
	if nc, err := nats.Connect(tt.node.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("connected without credentials")
	}
	if nc, err := nats.Connect(tt.node.ClientURL(), nats.UserInfo("alice", "bob-pw")); err == nil {
		nc.Close()
		t.Fatal("connected with another user's password")
	}

	bobNC, _ := tt.user(t, nats.UserInfo("bob", "bob-pw"))
	bob := api.NewClient(bobNC, "sessionlog.v1")
	aliceNC, aliceErrs := tt.user(t, nats.UserInfo("alice", "alice-pw"))
	alice := api.NewClient(aliceNC, "sessionlog.v1")
	pub, _ := tt.nkey.PublicKey()
	keyNC, _ := tt.user(t, nats.Nkey(pub, tt.nkey.Sign))
	keyUser := api.NewClient(keyNC, "sessionlog.v1")

	// globex's session, with a compaction an event consumer could see.
	if err := bob.Call(ctx, api.OpCreate, api.CreateRequest{ID: "plan"}, nil); err != nil {
		t.Fatal(err)
	}
	var a api.AppendReply
	if err := bob.Call(ctx, api.OpAppend, api.AppendRequest{Session: "plan", Entries: entries(userHi)}, &a); err != nil {
		t.Fatal(err)
	}
	comp := strings.Replace(compaction, "%s", a.Leaf, 1)
	if err := bob.Call(ctx, api.OpAppend, api.AppendRequest{Session: "plan", Entries: entries(comp)}, nil); err != nil {
		t.Fatal(err)
	}
	var bobView api.TreeReply
	if err := bob.Call(ctx, api.OpTree, api.SessionRequest{Session: "plan"}, &bobView); err != nil {
		t.Fatal(err)
	}

	t.Run("service", func(t *testing.T) {
		for _, c := range []*api.Client{alice, keyUser} {
			for _, op := range []string{api.OpOpen, api.OpContext, api.OpTree, api.OpStats, api.OpEntries, api.OpDelete} {
				if err := c.Call(ctx, op, api.SessionRequest{Session: "plan"}, nil); !errors.Is(err, session.ErrSessionNotFound) {
					t.Fatalf("%s of another tenant's session: %v", op, err)
				}
			}
			err := c.Call(ctx, api.OpAppend, api.AppendRequest{Session: "plan", Entries: entries(userHi)}, nil)
			if !errors.Is(err, session.ErrSessionNotFound) {
				t.Fatalf("append to another tenant's session: %v", err)
			}
			err = c.Call(ctx, api.OpFork, api.ForkRequest{Session: "plan", ID: "stolen"}, nil)
			if !errors.Is(err, session.ErrSessionNotFound) {
				t.Fatalf("fork of another tenant's session: %v", err)
			}
			var ls api.ListReply
			if err := c.Call(ctx, api.OpList, api.ListRequest{}, &ls); err != nil || len(ls.Sessions) != 0 {
				t.Fatalf("list shows %v (%v)", ls.Sessions, err)
			}
		}
		// The same id in acme is acme's own session; globex's is untouched.
		if err := alice.Call(ctx, api.OpCreate, api.CreateRequest{ID: "plan"}, nil); err != nil {
			t.Fatal(err)
		}
		if err := alice.Call(ctx, api.OpAppend, api.AppendRequest{Session: "plan", Entries: entries(userHi)}, nil); err != nil {
			t.Fatal(err)
		}
		if err := alice.Call(ctx, api.OpDelete, api.SessionRequest{Session: "plan"}, nil); err != nil {
			t.Fatal(err)
		}
		var after api.TreeReply
		if err := bob.Call(ctx, api.OpTree, api.SessionRequest{Session: "plan"}, &after); err != nil || len(after.Nodes) != len(bobView.Nodes) || after.Sequence != bobView.Sequence {
			t.Fatalf("globex's session changed: %d nodes seq %d, was %d seq %d (%v)", len(after.Nodes), after.Sequence, len(bobView.Nodes), bobView.Sequence, err)
		}
	})

	t.Run("direct JetStream", func(t *testing.T) {
		js, err := jetstream.New(aliceNC)
		if err != nil {
			t.Fatal(err)
		}
		st, err := js.Stream(ctx, tt.scfg.Stream)
		if err != nil {
			t.Fatalf("acme's own stream: %v", err)
		}
		// Reads name globex's subjects but can only reach acme's stream.
		if _, err := st.GetLastMsgForSubject(ctx, "sessions.plan.>"); !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Fatalf("last message of globex's session from acme: %v", err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
			m, err := st.GetMsg(ctx, seq)
			if err == nil && strings.Contains(string(m.Data), "secret plans") {
				t.Fatalf("acme's stream holds globex's compaction at %d", seq)
			}
		}
		// Writes are refused by the server's permissions.
		if err := aliceNC.Publish("sessions.plan.message", []byte("x")); err != nil {
			t.Fatal(err)
		}
		refused(t, aliceErrs, "sessions.plan.message")
		refusedRequest(t, ctx, aliceErrs, "$JS.API.STREAM.DELETE."+tt.scfg.Stream, func(ctx context.Context) error { return js.DeleteStream(ctx, tt.scfg.Stream) })
		refusedRequest(t, ctx, aliceErrs, "$JS.API.STREAM.PURGE."+tt.scfg.Stream, func(ctx context.Context) error { return st.Purge(ctx) })
		if err := aliceNC.Publish("$KV."+tt.scfg.IndexBucket()+".plan", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		refused(t, aliceErrs, "$KV."+tt.scfg.IndexBucket())
	})

	t.Run("core subscriptions", func(t *testing.T) {
		for _, subj := range []string{"sessions.>", "sessionlog.v1.>", ">"} {
			sub, err := aliceNC.SubscribeSync(subj)
			if err != nil {
				t.Fatal(err)
			}
			refused(t, aliceErrs, subj)
			sub.Unsubscribe()
		}
	})

	t.Run("event consumers", func(t *testing.T) {
		// acme's own event consumer, on acme's credentials, through the
		// Go library: it works, and sees only acme's compactions.
		b, err := stream.New(ctx, aliceNC, tt.scfg)
		if err != nil {
			t.Fatalf("read-only backend on a tenant user's connection: %v", err)
		}
		var mu sync.Mutex
		var seen []string
		sub, err := tracker.Subscribe(ctx, b, tracker.DefaultEventConfig("alice-compactions", session.TypeCompaction), func(_ context.Context, ev tracker.Event) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, ev.Session)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close(context.Background())
		if err := alice.Call(ctx, api.OpCreate, api.CreateRequest{ID: "mine"}, nil); err != nil {
			t.Fatal(err)
		}
		var ma api.AppendReply
		if err := alice.Call(ctx, api.OpAppend, api.AppendRequest{Session: "mine", Entries: entries(userHi)}, &ma); err != nil {
			t.Fatal(err)
		}
		if err := bob.Call(ctx, api.OpAppend, api.AppendRequest{Session: "plan", Entries: entries(comp)}, nil); err != nil {
			t.Fatal(err)
		}
		if err := alice.Call(ctx, api.OpAppend, api.AppendRequest{Session: "mine", Entries: entries(strings.Replace(compaction, "%s", ma.Leaf, 1))}, nil); err != nil {
			t.Fatal(err)
		}
		sessiontest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 {
				return errors.New("acme's compaction not delivered yet")
			}
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		for _, s := range seen {
			if s != "mine" {
				t.Fatalf("acme's consumer saw a compaction of %q", s)
			}
		}
		// Writing through the read-only backend is refused by the server.
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		st, err := b.OpenStore(short, "mine")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close(context.Background())
		leaf, _ := st.Leaf(ctx)
		e := &session.Entry{Type: session.TypeMessage, ID: "direct", ParentID: leaf, Timestamp: "2025-01-01T00:00:00.000Z",
			Message: &session.Message{Role: "user", Timestamp: 1, Content: session.TextContent("bypass")}}
		if err := st.Append(short, e); err == nil {
			t.Fatal("a tenant user appended around the service")
		}
		refused(t, aliceErrs, b.SessionSubjects("mine"))
	})
}
