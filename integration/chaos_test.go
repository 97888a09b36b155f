package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// answerWithin is how long a node may take to answer every operation
// after a fault is repaired (issue 68, item 5).
const answerWithin = 10 * time.Second

// A three-node hub with tenants and an edge goes through the run of
// faults after which two hub nodes once answered every request "list:
// nats: connection closed" for minutes, saying nothing (a full hub
// restart, a bandwidth-bound edge, kill -9 of the edge, kill -9 and a
// restart of one hub node), then through random faults (restarts, kill
// -9, route cuts, pauses, bandwidth bounds; more of them with -soak).
// After each, every hub node and the edge must answer every operation
// within answerWithin, and in the end the hub holds all the edge wrote.
func TestChaosEveryNodeAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node hub and an edge, and faults them for minutes: not with -short")
	}
	hub, leaves, edgeData, creds := startTenantHub(t)
	var hubURLs []string
	for _, l := range leaves {
		hubURLs = append(hubURLs, "nats-leaf://"+l)
	}
	edgeArgs := []string{"-domain", "laptop", "-hub", strings.Join(hubURLs, ","), "-hub-credentials", creds, "-partitions", fmt.Sprint(partitions)}
	edge := startServe(t, edgeData, edgeArgs...)
	startEdge := func(extra ...string) {
		edge.Cmd.Process.Kill()
		edge.Cmd.Wait()
		edge = startServe(t, edgeData, append(append([]string{}, edgeArgs...), extra...)...)
	}
	waitLinked(t, edge)

	ctx := context.Background()
	var wrote []string
	write := func(n int) {
		ec := clientOf(t, edge.URL, "")
		wrote = append(wrote, appendMessages(t, ec, "chaos-edge", strings.Repeat("e", 2<<10), n)...)
	}
	if err := clientOf(t, edge.URL, "").Call(ctx, api.OpCreate, api.CreateRequest{ID: "chaos-edge"}, nil); err != nil {
		t.Fatal(err)
	}
	write(20)

	step := 0
	check := func(what string) {
		t.Helper()
		step++
		for i := range hub.nodes {
			answersEverything(t, hub.url(i), "alice", fmt.Sprintf("chaos-%d-n%d", step, i+1), what)
		}
		answersEverything(t, edge.URL, "", fmt.Sprintf("chaos-%d-edge", step), what)
		write(5)
	}
	type fault struct {
		name string
		do   func()
	}
	incident := []fault{
		{"the whole hub restarted", func() {
			for i := range hub.nodes {
				hub.terminate(i)
			}
			for i := range hub.nodes {
				hub.spawn(i)
			}
			for i := range hub.nodes {
				hub.waitReady(i)
			}
		}},
		{"the edge bound to 20 kB/s", func() { startEdge("-hub-bandwidth", "20000"); write(40) }},
		{"the edge killed (-9) and started again", func() { startEdge() }},
		{"a hub node killed (-9) and started again", func() { hub.kill(1); write(5); hub.restart(1) }},
	}
	random := []fault{
		{"a hub node killed (-9) and started again", func() { n := rand.IntN(3); hub.kill(n); hub.restart(n) }},
		{"a hub node stopped (SIGTERM) and started again", func() { n := rand.IntN(3); hub.terminate(n); hub.restart(n) }},
		{"a hub node cut off its routes for 3 s", func() {
			n := rand.IntN(3)
			hub.cutOff(n, true)
			write(3)
			time.Sleep(3 * time.Second)
			hub.cutOff(n, false)
		}},
		{"a hub node paused for 3 s", func() { n := rand.IntN(3); hub.pause(n, true); time.Sleep(3 * time.Second); hub.pause(n, false) }},
		{"the edge killed (-9) and started again", func() { startEdge() }},
		{"the edge bound to 50 kB/s, then freed", func() { startEdge("-hub-bandwidth", "50000"); write(20); startEdge() }},
	}
	for _, f := range incident {
		t.Logf("fault: %s", f.name)
		f.do()
		check(f.name)
	}
	rounds := 2
	if *soak > 0 {
		rounds = int(*soak / (20 * time.Second))
	}
	seed := time.Now().UnixNano()
	t.Logf("random faults: %d, seed %d", rounds, seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	for range rounds {
		f := random[r.IntN(len(random))]
		t.Logf("fault: %s", f.name)
		f.do()
		check(f.name)
	}
	// Nothing lost on the way: all the edge wrote is at the hub, once.
	hubHolds(t, clientOf(t, hub.url(0), "alice"), wrote, "chaos-edge")
}

// clientOf is a client of the node at url alone: a node that cannot
// answer is not hidden by another answering for it.
func clientOf(t *testing.T, url, user string) *api.Client {
	t.Helper()
	opts := []nats.Option{nats.IgnoreDiscoveredServers(), nats.DontRandomize(), nats.MaxReconnects(-1)}
	if user != "" {
		opts = append(opts, nats.UserInfo(user, user+"-pw"))
	}
	var nc *nats.Conn
	sessiontest.CheckFor(t, answerWithin, 50*time.Millisecond, func() (err error) {
		nc, err = nats.Connect(url, opts...)
		return err
	})
	t.Cleanup(nc.Close)
	return api.NewClient(nc, api.DefaultSubject)
}

// answersEverything requires the node at url to answer each operation
// within answerWithin: a write, the reads of a session, the listing,
// usage and search.
func answersEverything(t *testing.T, url, user, id, after string) {
	t.Helper()
	c := clientOf(t, url, user)
	ops := []struct {
		op  string
		req any
	}{
		{api.OpCreate, api.CreateRequest{ID: id}},
		{api.OpAppend, api.AppendRequest{Session: id, Entries: []jsontext.Value{jsontext.Value(`{"type":"message","message":{"role":"user","content":"after a fault"}}`)}}},
		{api.OpTree, api.TreeRequest{Session: id}},
		{api.OpContext, api.ContextRequest{Session: id}},
		{api.OpStats, api.StatsRequest{Session: id}},
		{api.OpList, api.ListRequest{}},
		{api.OpUsage, api.UsageRequest{}},
		{api.OpSearch, api.SearchRequest{Query: "after"}},
	}
	for _, o := range ops {
		start := time.Now()
		var last error
		for {
			ctx, cancel := context.WithTimeout(context.Background(), answerWithin)
			var reply any
			last = c.Call(ctx, o.op, o.req, &reply)
			cancel()
			if last == nil || time.Since(start) > answerWithin {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if last != nil {
			t.Fatalf("after %s: %s does not answer %s within %v: %v", after, url, o.op, answerWithin, last)
		}
	}
}
