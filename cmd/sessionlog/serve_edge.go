package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/codec"
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
	if a.leafListen != "" && a.tenants == "" {
		// Without accounts a link would carry every subject: an edge's
		// writes would reach the hub's streams directly, answered by
		// both sides' JetStream.
		return usageError("-leaf-listen needs -tenants: each edge signs in as its tenant's, and its link carries only the sync")
	}
	if a.hub == "" {
		return nil
	}
	if cfg.ServerName == cluster.DefaultConfig("").ServerName {
		// A hub takes one link per server name: every edge its own.
		cfg.ServerName = "sessionlog-" + a.domain
	}
	if a.fromHub != "all" && a.fromHub != "none" {
		return usageError("-from-hub %q: all or none", a.fromHub)
	}
	user, err := hubUser(a.hubCredentials)
	if err != nil {
		return err
	}
	h := &cluster.HubConfig{Bandwidth: a.hubBandwidth}
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

// startLink has the edge ask its hub, over its link, to take in its
// sessions, and take in the hub's.
func (a *apiFlags) startLink(node *cluster.Node, cfg cluster.Config, x *api) {
	req := slapi.LinkRequest{Domain: cfg.Domain, Streams: x.backends[0].Config().Streams(), Redact: a.redaction}
	x.linkToHub(node, req, a.fromHub == "all", func(s string) {
		if a.log != nil {
			fmt.Fprintln(a.log, s)
		}
	})
}

// recordRedaction keeps, for the link request, the redaction every
// entry in the data dir went through (redactionInForce).
func (a *apiFlags) recordRedaction(dataDir string, cfg *codec.RedactConfig) error {
	rec, err := redactionInForce(dataDir, cfg)
	if err != nil {
		return err
	}
	a.redaction, err = json.Marshal(rec)
	return err
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

// linkToHub asks the hub, over the edge's link, to source this edge's
// sessions streams, until it has (and every relinkEvery after); then
// JetStream carries what the edge writes, whenever the link is up.
func (x *api) linkToHub(node *cluster.Node, req slapi.LinkRequest, fromHub bool, log func(string)) {
	var sourcing bool // this edge's streams source the hub's
	var linkedAt time.Time
	since, said := time.Now(), false
	x.periodic(linkEvery, func(ctx context.Context) {
		// Asked again now and then: the hub's streams may have been
		// changed (or made again) since.
		if !linkedAt.IsZero() && time.Since(linkedAt) < relinkEvery && (sourcing || !fromHub) {
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
		if err := slapi.NewClient(nc, "sessionlog.v1").Call(cctx, slapi.OpLink, req, &reply); err != nil {
			log(fmt.Sprintf("sessionlog: the hub did not take this edge's sessions in yet: %v (asked again in %v)", err, linkEvery))
			return
		}
		if linkedAt.IsZero() {
			log(fmt.Sprintf("sessionlog: linked to the hub: its streams %v take in this edge's sessions", reply.Streams))
		}
		linkedAt = time.Now()
		if !fromHub || reply.Domain == "" {
			return
		}
		// The tenant's sessions at the hub, here too: this node's streams
		// source the hub's (JetStream keeps the position; a message that
		// went from here to the hub and back is one the stream's
		// duplicate window, or failing that the readers, pass over).
		if _, err := x.backends[0].SourceFrom(cctx, reply.Domain, reply.Streams); err != nil {
			log(fmt.Sprintf("sessionlog: could not take in the hub's sessions: %v (asked again in %v)", err, linkEvery))
			sourcing = false
			return
		}
		if !sourcing {
			log(fmt.Sprintf("sessionlog: this edge's streams take in the hub's sessions (domain %s)", reply.Domain))
		}
		sourcing = true
	})
}

// redactionFile records, in a data dir, the redaction every entry stored
// there went through: what an edge tells its hub when it links.
const redactionFile = "redaction.json"

// redactionInForce is the redaction every entry in dataDir went through,
// given that it is now stored with cfg (nil: none): the first start
// records cfg; each later one keeps only the rules it still has. A data
// dir that holds a store but no record went through none that can be told.
func redactionInForce(dataDir string, cfg *codec.RedactConfig) (codec.RedactConfig, error) {
	var now codec.RedactConfig
	if cfg != nil {
		now = *cfg
	}
	path := filepath.Join(dataDir, redactionFile)
	var rec codec.RedactConfig
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &rec); err != nil {
			return rec, fmt.Errorf("%s: %w (remove it only if every entry here went through the redaction given now)", path, err)
		}
		rec = rec.Common(now)
	case !errors.Is(err, os.ErrNotExist):
		return rec, err
	default:
		if _, serr := os.Stat(filepath.Join(dataDir, "jetstream")); serr != nil {
			rec = now // a new store: everything it will hold goes through now
		}
	}
	out, err := json.Marshal(rec)
	if err != nil {
		return rec, err
	}
	if !bytes.Equal(out, b) {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return rec, err
		}
		if err := writeFileAtomic(path, out, 0o600); err != nil {
			return rec, err
		}
	}
	return rec, nil
}
