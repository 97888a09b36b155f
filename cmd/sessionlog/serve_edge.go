package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
)

// configureEdge makes the node a hub (-leaf-listen) or an edge (-hub).
func (a *apiFlags) configureEdge(cfg *cluster.Config) error {
	if a.hub == "" && a.leafListen == "" {
		if a.domain != "" {
			cfg.Domain = a.domain
		}
		return nil
	}
	if a.domain == "" {
		return usageError("-hub and -leaf-listen need -domain: this node's JetStream domain, unlike every other node's")
	}
	cfg.Domain, cfg.LeafListen = a.domain, a.leafListen
	if a.hub == "" {
		return nil
	}
	user, err := hubUser(a.hubCredentials)
	if err != nil {
		return err
	}
	h := &cluster.HubConfig{}
	for _, u := range strings.Split(a.hub, ",") {
		u = strings.TrimSpace(u)
		if user != nil {
			p, err := url.Parse(u)
			if err != nil {
				return usageError("-hub %q is not a URL", u)
			}
			p.User = user
			u = p.String()
		}
		h.URLs = append(h.URLs, u)
	}
	cfg.Hub = h
	return nil
}

// hubUser reads user:password from a file readable by its owner alone.
func hubUser(path string) (*url.Userinfo, error) {
	if path == "" {
		return nil, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: others may read it (mode %v): chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name, pw, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
	if !ok || name == "" || pw == "" {
		return nil, fmt.Errorf("%s: want user:password", path)
	}
	return url.UserPassword(name, pw), nil
}

// linkEvery is how often an edge whose hub has not taken its sessions in
// yet asks again (while its link is up).
const linkEvery = 2 * time.Second

// unlinkedSaid is how long an edge goes without its link before it says
// so; relinkEvery how often a linked edge asks the hub again.
const (
	unlinkedSaid = 30 * time.Second
	relinkEvery  = 5 * time.Minute
)

// linkToHub asks the hub, over the edge's link, to source this edge's
// sessions streams, until it has (and every relinkEvery after); then
// JetStream carries what the edge writes, whenever the link is up.
func (x *api) linkToHub(node *cluster.Node, domain string, streams []string, log func(string)) {
	var linkedAt time.Time
	since, said := time.Now(), false
	x.periodic(linkEvery, func(ctx context.Context) {
		// Asked again now and then: the hub's streams may have been
		// changed (or made again) since.
		if !linkedAt.IsZero() && time.Since(linkedAt) < relinkEvery {
			return
		}
		if !node.Linked() {
			// Said once: an edge works alone, but one never linked may have
			// the wrong address or credentials.
			if !said && time.Since(since) > unlinkedSaid {
				said = true
				log(fmt.Sprintf("sessionlog: no link to the hub after %v: writes are kept here meanwhile; check -hub and -hub-credentials if it should be up", unlinkedSaid))
			}
			return
		}
		nc, err := node.Connect()
		if err != nil {
			return
		}
		defer nc.Close()
		var reply slapi.LinkReply
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := slapi.NewClient(nc, "sessionlog.v1").Call(cctx, slapi.OpLink, slapi.LinkRequest{Domain: domain, Streams: streams}, &reply); err != nil {
			log(fmt.Sprintf("sessionlog: the hub did not take this edge's sessions in yet: %v (asked again in %v)", err, linkEvery))
			return
		}
		if linkedAt.IsZero() {
			log(fmt.Sprintf("sessionlog: linked to the hub: its streams %v take in this edge's sessions", reply.Streams))
		}
		linkedAt = time.Now()
	})
}
