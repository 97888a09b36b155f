package main

import (
	"context"
	"fmt"
	"time"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
)

// startLink has the edge ask its hub, over its link, to take in its
// sessions, and take in the hub's.
func (a *apiFlags) startLink(node *cluster.Node, cfg cluster.Config, x *api) {
	req := slapi.LinkRequest{Domain: cfg.Domain, Streams: x.backends[0].Config().Streams(), Redact: a.redaction}
	x.linkToHub(node, req, a.fromHub == "all", a.say)
}

// linkEvery is how often an edge whose hub has not taken its sessions in
// yet asks again (while its link is up).
const linkEvery = 500 * time.Millisecond

// unlinkedSaid is how long an edge goes without its link before it says
// so; relinkEvery how often a linked edge asks the hub again.
const (
	unlinkedSaid = 30 * time.Second
	relinkEvery  = 5 * time.Minute
)

// linker is an edge's side of its link: it asks the hub, over the link,
// to take in this edge's sessions until it has (and every relinkEvery
// after: the hub's streams may have been changed or made again), and
// makes this edge's streams take in the hub's (fromHub). Then JetStream
// carries the sessions, whenever the link is up.
type linker struct {
	node    *cluster.Node
	x       *api
	req     slapi.LinkRequest
	fromHub bool
	log     func(string)

	said     bool
	start    time.Time
	linkedAt time.Time
	sourcing bool // this edge's streams source the hub's
}

func (x *api) linkToHub(node *cluster.Node, req slapi.LinkRequest, fromHub bool, log func(string)) {
	l := &linker{node: node, x: x, req: req, fromHub: fromHub, log: log, start: time.Now()}
	x.periodic(linkEvery, l.tick)
}

func (l *linker) tick(ctx context.Context) {
	due := l.linkedAt.IsZero() || time.Since(l.linkedAt) >= relinkEvery || (l.fromHub && !l.sourcing)
	if !due {
		return
	}
	if !l.node.Linked() {
		// Said once: an edge works alone, but one never linked may have
		// the wrong address or credentials.
		if !l.said && time.Since(l.start) > unlinkedSaid {
			l.said = true
			l.log(fmt.Sprintf("sessionlog: no link to the hub after %v: writes are kept here meanwhile; check -hub and -hub-credentials if it should be up", unlinkedSaid))
		}
		return
	}
	nc, err := l.node.Connect()
	if err != nil {
		return
	}
	defer nc.Close()
	var reply slapi.LinkReply
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := slapi.NewClient(nc, "sessionlog.v1").Call(cctx, slapi.OpLink, l.req, &reply); err != nil {
		l.log(fmt.Sprintf("sessionlog: the hub did not take this edge's sessions in yet: %v (asked again in %v)", err, linkEvery))
		return
	}
	if l.linkedAt.IsZero() {
		l.log(fmt.Sprintf("sessionlog: linked to the hub: its streams %v take in this edge's sessions", reply.Streams))
	}
	l.linkedAt = time.Now()
	if l.fromHub && reply.Domain != "" {
		// The tenant's sessions at the hub, here too: this node's
		// streams source the hub's (JetStream keeps the position; a
		// message that went from here to the hub and back is one the
		// duplicate window, or failing that the readers, pass over).
		b := l.x.backends[0]
		if _, err := b.SourceFrom(cctx, reply.Domain, reply.Streams); err != nil {
			l.log(fmt.Sprintf("sessionlog: could not take in the hub's sessions: %v (asked again in %v)", err, linkEvery))
			l.sourcing = false
			return
		}
		if !l.sourcing {
			l.log(fmt.Sprintf("sessionlog: this edge's streams take in the hub's sessions (domain %s)", reply.Domain))
		}
		l.sourcing = true
	}
}
