package stream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/stream"
)

// The hash is part of the format: clients in other languages address a
// session's stream with it. These values were computed independently
// (FNV-1a 32 as specified, in Python).
func TestPartitionOfIsFNV1a(t *testing.T) {
	for _, tc := range []struct {
		id   string
		n    int
		want int
	}{
		{"a", 4, 0}, {"b", 4, 1}, {"c", 4, 2}, {"conv-a", 4, 1}, {"session_42", 4, 2},
		{"01JC9Z3Q4T0000000000000000", 4, 2}, {"a", 7, 5}, {"b", 7, 6}, {"conv-a", 7, 2},
		{"a", 1, 0}, {"anything", 0, 0},
	} {
		if got := stream.PartitionOf(tc.id, tc.n); got != tc.want {
			t.Errorf("PartitionOf(%q, %d) = %d, want %d", tc.id, tc.n, got, tc.want)
		}
	}
}

// A partitioned deployment keeps each session wholly in its partition's
// stream, uses every partition, and is found by clients that leave the
// count to it; a client asking for another count is refused.
func TestPartitionedLayout(t *testing.T) {
	ctx := context.Background()
	cfg := stream.DefaultConfig()
	cfg.Partitions = 4
	b := newBackendWith(t, cfg)
	defer b.Close(ctx)
	cfg = b.Config()
	if cfg.Partitions != 4 || len(b.Partitions()) != 4 {
		t.Fatalf("config says %d partitions, backend has %d", cfg.Partitions, len(b.Partitions()))
	}
	perStream := map[string]int{}
	for i := range 40 {
		id := fmt.Sprintf("s%d", i)
		st, err := b.CreateStore(ctx, sessiontest.TestHeader(id))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := session.New(st, sessiontest.TestConfig())
		if _, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("hi")}); err != nil {
			t.Fatal(err)
		}
		st.Close(ctx)
		want := fmt.Sprintf("%s_P%d", cfg.Stream, stream.PartitionOf(id, 4))
		if got := cfg.StreamOf(id); got != want {
			t.Fatalf("StreamOf(%s) = %s, want %s", id, got, want)
		}
		perStream[want] += 2
	}
	for _, p := range b.Partitions() {
		info, err := p.Stream().Info(ctx, jetstream.WithSubjectFilter(p.Subjects()))
		if err != nil {
			t.Fatal(err)
		}
		name := info.Config.Name
		if perStream[name] == 0 {
			t.Errorf("partition %d (%s) holds no session", p.Index(), name)
		}
		// Barriers share the stream: count the sessions' subjects only.
		var n uint64
		for subj, c := range info.State.Subjects {
			if _, err := b.Decode(subj, nil, 0); !errors.Is(err, stream.ErrNotSession) {
				n += c
			}
		}
		if int(n) != perStream[name] {
			t.Errorf("%s holds %d session messages, want %d", name, n, perStream[name])
		}
		if info.Config.Metadata["sessionlog.partitions"] != "4" || info.Config.Metadata["sessionlog.partition"] != fmt.Sprint(p.Index()) {
			t.Errorf("%s metadata %v", name, info.Config.Metadata)
		}
	}
	// Listing spans the partitions, in one order, page after page.
	var seen []string
	opts := session.ListOptions{Limit: 7}
	for {
		page, err := b.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range page.Sessions {
			seen = append(seen, in.ID)
		}
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	if len(seen) != 40 {
		t.Fatalf("listed %d sessions across partitions, want 40: %v", len(seen), seen)
	}
	// Another client finds the layout; one that asks for another count
	// is told.
	found := cfg
	found.Partitions = 0
	other := newBackendOn(t, found)
	defer other.Close(ctx)
	if other.Config().Partitions != 4 {
		t.Fatalf("a client found %d partitions", other.Config().Partitions)
	}
	if _, err := other.OpenStore(ctx, "s7"); err != nil {
		t.Fatal(err)
	}
	wrong := cfg
	wrong.Partitions = 2
	if _, err := stream.New(ctx, nc, wrong); !errors.Is(err, stream.ErrPartitions) {
		t.Fatalf("a client asking for 2 partitions of 4: %v", err)
	}
}

// A deployment of one stream (every deployment before partitions) stays
// as it is: found as one partition, refused to a client asking for more;
// and a deployment holding both layouts is refused.
func TestUnpartitionedDeploymentsKeepWorking(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	defer b.Close(ctx)
	cfg := b.Config()
	// A stream made before partitions has no layout metadata.
	js := b.JetStream()
	legacy := jetstream.StreamConfig{Name: cfg.Stream + "L", Subjects: []string{cfg.Prefix + "l.>"}, Storage: jetstream.FileStorage,
		AllowAtomicPublish: true, AllowDirect: true, Duplicates: 2 * time.Minute, DenyDelete: true}
	if _, err := js.CreateStream(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	old := cfg
	old.Stream, old.Prefix, old.Partitions = legacy.Name, cfg.Prefix+"l", 0
	lb := newBackendOn(t, old)
	defer lb.Close(ctx)
	if lb.Config().Partitions != 1 {
		t.Fatalf("a stream without layout metadata read as %d partitions", lb.Config().Partitions)
	}
	st, err := lb.CreateStore(ctx, sessiontest.TestHeader("kept"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, textEntry("k1", "")); err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	// … and its subject per entry type.
	if got := sessionSubjects(t, js, legacy.Name, cfg.Prefix+"l.kept.>"); !slices.Equal(got, []string{cfg.Prefix + "l.kept.message", cfg.Prefix + "l.kept.session"}) {
		t.Fatalf("a stream without layout metadata got subjects %v", got)
	}
	if st, err = lb.OpenStore(ctx, "kept"); err != nil {
		t.Fatal(err)
	} else if es, _ := st.Entries(ctx); len(es) != 1 {
		t.Fatalf("reopened with %d entries", len(es))
	}
	st.Close(ctx)
	more := old
	more.Partitions = 4
	if _, err := stream.New(ctx, nc, more); !errors.Is(err, stream.ErrPartitions) {
		t.Fatalf("asking a one-stream deployment for 4 partitions: %v", err)
	}
	// Both layouts under one name: refused, whatever the client asks.
	both := cfg
	both.Partitions = 0
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cfg.Stream + "_P0", Subjects: []string{cfg.Prefix + "x.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.New(ctx, nc, both); !errors.Is(err, stream.ErrPartitions) {
		t.Fatalf("a deployment with both layouts: %v", err)
	}
	// A stream whose metadata names a subject layout this version does not
	// know is refused, not read as either.
	for i, bad := range []string{"type", "Session", "session "} {
		name := fmt.Sprintf("%sS%d", cfg.Stream, i)
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{fmt.Sprintf("%ss%d.>", cfg.Prefix, i)},
			Metadata: map[string]string{"sessionlog.subjects": bad}})
		if err != nil {
			t.Fatal(err)
		}
		odd := cfg
		odd.Stream, odd.Prefix, odd.Partitions = name, fmt.Sprintf("%ss%d", cfg.Prefix, i), 0
		if _, err := stream.New(ctx, nc, odd); !errors.Is(err, stream.ErrPartitions) || !strings.Contains(err.Error(), name) {
			t.Fatalf("a stream saying subjects per %q: %v", bad, err)
		}
	}
	// A first partition whose metadata does not give a usable count.
	for i, bad := range []string{"", "abc", "1", "65", "-4", "4 "} {
		name := fmt.Sprintf("%sM%d", cfg.Stream, i)
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name + "_P0", Subjects: []string{fmt.Sprintf("%sm%d.>", cfg.Prefix, i)},
			Metadata: map[string]string{"sessionlog.partitions": bad}})
		if err != nil {
			t.Fatal(err)
		}
		odd := cfg
		odd.Stream, odd.Prefix, odd.Partitions = name, fmt.Sprintf("%sm%d", cfg.Prefix, i), 0
		if _, err := stream.New(ctx, nc, odd); !errors.Is(err, stream.ErrPartitions) {
			t.Fatalf("a first partition saying %q partitions: %v", bad, err)
		}
	}
}

// sessionSubjects lists the subjects of stream matching filter, sorted.
func sessionSubjects(t *testing.T, js jetstream.JetStream, name, filter string) []string {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for subj := range info.State.Subjects {
		out = append(out, subj)
	}
	slices.Sort(out)
	return out
}

// A session is one subject in a new deployment, whatever its entries'
// types, in every partition; the stream records the layout.
func TestASessionIsOneSubject(t *testing.T) {
	ctx := context.Background()
	sessiontest.EachLayout(t, func(t *testing.T, partitions int) {
		cfg := stream.DefaultConfig()
		cfg.Partitions = partitions
		b := newBackendWith(t, cfg)
		defer b.Close(ctx)
		for _, id := range []string{"a", "b", "c", "d"} {
			st, err := b.CreateStore(ctx, sessiontest.TestHeader(id))
			if err != nil {
				t.Fatal(err)
			}
			s, _ := session.New(st, sessiontest.TestConfig())
			u, err := s.AppendMessage(ctx, session.Message{Role: session.RoleUser, Content: session.TextContent("hi")})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.AppendModelChange(ctx, "anthropic", "claude"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SetLabel(ctx, u.ID, "start"); err != nil {
				t.Fatal(err)
			}
			st.Close(ctx)
			stream := b.Config().StreamOf(id)
			got := sessionSubjects(t, b.JetStream(), stream, b.SessionSubjects(id))
			if !slices.Equal(got, []string{b.SessionSubjects(id)}) {
				t.Fatalf("session %s is on subjects %v, want only %s", id, got, b.SessionSubjects(id))
			}
			info, err := b.StreamOf(id).Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if md := info.Config.Metadata["sessionlog.subjects"]; md != "session" {
				t.Fatalf("stream %s records subjects per %q", stream, md)
			}
		}
	})
}

// An edge keeps what it wrote apart from what its hub sends: a client
// that names no layout takes the edge's, and a deployment made otherwise
// is not taken for an edge (its own writes are not where an edge's go).
func TestEdgeLayoutIsTheDeployments(t *testing.T) {
	ctx := context.Background()
	cfg := stream.DefaultConfig()
	cfg.Edge = true
	edge := newBackendWith(t, cfg)
	cfg = edge.Config()
	cfg.Edge = false
	client := newBackendOn(t, cfg)
	if !client.Config().Edge {
		t.Fatal("a client of an edge's deployment took another layout")
	}
	st, err := client.CreateStore(ctx, sessiontest.TestHeader("s"))
	if err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	got := sessionSubjects(t, edge.JetStream(), edge.Config().StreamOf("s"), edge.SessionSubjects("s"))
	if want := []string{cfg.Prefix + ".s.o"}; !slices.Equal(got, want) {
		t.Fatalf("an edge's session is on %v, want %v", got, want)
	}

	plain := newBackend(t)
	cfg = plain.Config()
	cfg.Edge = true
	if _, err := stream.New(ctx, plain.Conn(), cfg); !errors.Is(err, stream.ErrPartitions) || !strings.Contains(err.Error(), "without -hub") {
		t.Fatalf("an edge on a deployment made without -hub: %v", err)
	}
}
