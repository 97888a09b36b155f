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
// so; relinkEvery how often a linked edge asks the hub again, and
// progressEvery how often while a sync is under way (saying how far it
// is).
const (
	unlinkedSaid  = 30 * time.Second
	relinkEvery   = 5 * time.Minute
	progressEvery = 5 * time.Second
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
	sourcing bool   // this edge's streams source the hub's
	syncing  bool   // messages were still to go either way, last asked
	link     uint64 // the link's id at the last tick (cluster.Node.LinkID)
	counted  bool   // the last progress was counted both ways
	resume   bool   // the link came back, and the hub is still to be told
	// progressSaid is the last progress said, and when.
	progressSaid   string
	progressSaidAt time.Time
	// carried and carriedAt are a bandwidth-bound link's bytes when its
	// rate was last said (linkRate).
	carried   int64
	carriedAt time.Time
	// refused paces the tries after the hub refused (or failed) a link,
	// and what is said of them.
	refused retries
}

// refusal says a refused or failed link when it is worth saying, and
// when it is asked again (later each time, up to a minute apart).
func (l *linker) refusal(msg string) {
	if say, wait := l.refused.failed(time.Now(), msg); say {
		l.log(fmt.Sprintf("sessionlog: %s (asked again in %v)", msg, wait))
	}
}

func (x *api) linkToHub(node *cluster.Node, req slapi.LinkRequest, fromHub bool, log func(string)) {
	l := &linker{node: node, x: x, req: req, fromHub: fromHub, log: log, start: time.Now()}
	x.periodic(linkEvery, l.tick)
}

func (l *linker) tick(ctx context.Context) {
	every := relinkEvery
	switch {
	case l.syncing && !l.counted:
		every = time.Second // the count comes once the sources have heard
	case l.syncing:
		every = progressEvery
	}
	// A link that has just come back is asked about at once: what was
	// written apart is on its way.
	link := l.node.LinkID()
	linked := link != 0
	if why := l.node.LinkRefused(); why != "" && l.refused.due(time.Now()) {
		l.refusal(fmt.Sprintf("the hub refuses this edge's link (%s): it was revoked at the hub, or -hub-credentials is wrong; writes are kept here meanwhile", why))
	}
	cameUp := linked && link != l.link
	l.link = link
	if cameUp {
		l.progressSaid = "" // said again, of this sync
	}
	due := cameUp || l.resume || l.linkedAt.IsZero() || time.Since(l.linkedAt) >= every || (l.fromHub && !l.sourcing)
	if !due || (!cameUp && !l.refused.due(time.Now())) {
		return
	}
	if !linked {
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
	// Back after a cut: both sides' sourcing starts again at once.
	resume := l.resume || (cameUp && !l.linkedAt.IsZero())
	req := l.req
	req.Resume = resume
	if err := slapi.NewClient(nc, slapi.DefaultSubject).Call(cctx, slapi.OpLink, req, &reply); err != nil {
		l.resume = resume // asked again, as a resume
		l.refusal(fmt.Sprintf("the hub did not take this edge's sessions in yet: %v", err))
		return
	}
	if l.linkedAt.IsZero() {
		l.log(fmt.Sprintf("sessionlog: linked to the hub: its streams %v take in this edge's sessions", reply.Streams))
	}
	l.linkedAt = time.Now()
	defer func() { l.progress(ctx, reply) }()
	if l.fromHub && reply.Domain != "" {
		// The tenant's sessions at the hub, here too: this node's
		// streams source the hub's (JetStream keeps the position; a
		// message that went from here to the hub and back is one the
		// duplicate window, or failing that the readers, pass over).
		b := l.x.backends[0]
		source := b.SourceFrom
		if resume {
			source = b.Restart
		}
		if _, err := source(cctx, reply.Domain, reply.Streams); err != nil {
			l.refusal(fmt.Sprintf("could not take in the hub's sessions: %v", err))
			l.sourcing = false
			return
		}
		if !l.sourcing {
			l.log(fmt.Sprintf("sessionlog: this edge's streams take in the hub's sessions (domain %s)", reply.Domain))
		}
		l.sourcing = true
	}
	l.resume = false
	l.refused.ok()
}

// progress says how far a sync is, while messages are still to go either
// way (as JetStream's sourcing counts them: the hub's count of this
// edge's, and this edge's of the hub's), and once it is done.
func (l *linker) progress(ctx context.Context, reply slapi.LinkReply) {
	var in uint64
	inHeard := true
	if l.sourcing {
		var err error
		if in, inHeard, err = l.x.backends[0].SourceLag(ctx, reply.Domain); err != nil {
			return
		}
	}
	was := l.syncing
	l.syncing = reply.Behind > 0 || in > 0 || !reply.Heard || !inHeard
	l.counted = reply.Heard && inHeard
	switch {
	case l.syncing:
		up, down := fmt.Sprint(reply.Behind), fmt.Sprint(in)
		if !reply.Heard {
			up = "(not counted yet: the hub is still to hear from this edge)"
		}
		if !inHeard {
			down = "(not counted yet)"
		}
		said := fmt.Sprintf("sessionlog: sync: %s of this edge's messages still to reach the hub, %s of the hub's still to come", up, down) + l.linkRate()
		// Said when it changed, and each minute it stays (a source
		// that cannot start).
		if said != l.progressSaid || time.Since(l.progressSaidAt) >= time.Minute {
			l.log(said)
			l.progressSaid, l.progressSaidAt = said, time.Now()
		}
	case was:
		l.progressSaid = ""
		l.log("sessionlog: sync: up to date with the hub")
	}
}

// linkRate says what a bandwidth-bound link carried, both ways, since it
// was last said: " (the link: 19,400 B/s of its 20,000)"; "" without a
// bound, or the first time.
func (l *linker) linkRate() string {
	carried, bound := l.node.LinkCarried()
	if bound == 0 {
		return ""
	}
	now := time.Now()
	was, at := l.carried, l.carriedAt
	l.carried, l.carriedAt = carried, now
	if at.IsZero() || now.Sub(at) < time.Second {
		return ""
	}
	rate := float64(carried-was) / now.Sub(at).Seconds()
	return fmt.Sprintf(" (the link: %s B/s of its %s)", thousands(int64(rate)), thousands(bound))
}
