package cluster

// Edge nodes: a machine's own node (a laptop, a CI runner) linked to the
// fleet's hub as a NATS leafnode. Each side keeps its own JetStream (a
// domain each): the edge takes writes whether or not its link is up, and
// what crosses the link is what JetStream sources across domains.

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// HubConfig links a node to a hub.
type HubConfig struct {
	// URLs are the hub's leafnode addresses, with the tenant user's
	// credentials: nats-leaf://alice:secret@hub.example:7422.
	URLs []string
	// ReconnectEvery is how often a lost link is tried again (0: 1 s).
	ReconnectEvery time.Duration
	// Bandwidth bounds the link's bytes a second, both directions
	// together (0: none): see relay.go. Not with tls:// URLs (the relay
	// stands in for the hub's address).
	Bandwidth int64
}

var domainRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidDomain says whether d can name a node's JetStream domain (an
// edge's, a hub's): 1-64 letters, digits, '-' or '_'.
func ValidDomain(d string) bool { return domainRE.MatchString(d) }

func (c Config) validateLeaf() error {
	if c.Domain != "" && !domainRE.MatchString(c.Domain) {
		return fmt.Errorf("%w: domain %q must be 1-64 letters, digits, '-' or '_'", ErrInvalidConfig, c.Domain)
	}
	if c.LeafListen != "" {
		if _, _, err := splitHostPort(c.LeafListen); err != nil {
			return fmt.Errorf("%w: leafnode listen address: %v", ErrInvalidConfig, err)
		}
	}
	if h := c.Hub; h != nil {
		if c.Domain == "" {
			return fmt.Errorf("%w: an edge node needs a JetStream domain of its own", ErrInvalidConfig)
		}
		if len(h.URLs) == 0 {
			return fmt.Errorf("%w: no hub URL", ErrInvalidConfig)
		}
		if h.Bandwidth < 0 {
			return fmt.Errorf("%w: negative bandwidth", ErrInvalidConfig)
		}
		for _, u := range h.URLs {
			p, err := url.Parse(u)
			if err != nil || (p.Scheme != "nats-leaf" && p.Scheme != "tls" && p.Scheme != "nats") || p.Port() == "" {
				return fmt.Errorf("%w: hub URL %q (want nats-leaf://user:password@host:7422)", ErrInvalidConfig, redactURL(u))
			}
			if h.Bandwidth > 0 && p.Scheme == "tls" {
				return fmt.Errorf("%w: a bandwidth bound on a TLS link (%q) is not supported", ErrInvalidConfig, redactURL(u))
			}
		}
	}
	return nil
}

// redactURL is u without its password, for messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable)"
	}
	return p.Redacted()
}

// applyLeaf sets the leafnode options; the relays it starts (a bandwidth
// bound) are the caller's to close.
func applyLeaf(opts *server.Options, cfg Config) (relays []*relay, err error) {
	defer func() {
		if err != nil {
			for _, r := range relays {
				r.close()
			}
			relays = nil
		}
	}()
	opts.JetStreamDomain = cfg.Domain
	if cfg.LeafListen != "" {
		host, port, err := splitHostPort(cfg.LeafListen)
		if err != nil {
			return nil, fmt.Errorf("%w: leafnode listen address: %v", ErrInvalidConfig, err)
		}
		if port == 0 {
			port = server.RANDOM_PORT
		}
		opts.LeafNode.Host, opts.LeafNode.Port = host, port
		// Edges link at the addresses they are given (their -hub list),
		// never at those the hub's nodes know themselves by, which a
		// laptop outside (behind a load balancer, a NAT, a tunnel) may
		// not reach.
		opts.LeafNode.NoAdvertise = true
	}
	if h := cfg.Hub; h != nil {
		remote := &server.RemoteLeafOpts{}
		for _, u := range h.URLs {
			p, err := url.Parse(u)
			if err != nil {
				return nil, fmt.Errorf("%w: hub URL %q", ErrInvalidConfig, redactURL(u))
			}
			if p.Scheme == "nats-leaf" {
				p.Scheme = "nats"
			}
			if h.Bandwidth > 0 {
				r, err := startRelay(p.Host, h.Bandwidth)
				if err != nil {
					return relays, fmt.Errorf("cluster: bandwidth relay: %w", err)
				}
				relays = append(relays, r)
				p.Host = r.addr()
			}
			remote.URLs = append(remote.URLs, p)
		}
		if h.Bandwidth > 0 {
			// The relay reads the protocol's frames to let the small
			// ones go first: the link carries them uncompressed.
			remote.Compression = server.CompressionOpts{Mode: server.CompressionOff}
		}
		opts.LeafNode.ReconnectInterval = h.ReconnectEvery
		if opts.LeafNode.ReconnectInterval <= 0 {
			opts.LeafNode.ReconnectInterval = time.Second
		}
		opts.LeafNode.Remotes = append(opts.LeafNode.Remotes, remote)
	}
	return relays, nil
}

// LeafURL is where edge nodes link to this node (nats-leaf://host:port),
// "" without LeafListen.
func (n *Node) LeafURL() string {
	if n.cfg.LeafListen == "" {
		return ""
	}
	host, _, _ := splitHostPort(n.cfg.LeafListen)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	// The server writes the port it took into its options (port 0: any).
	n.mu.Lock()
	port := n.opts.LeafNode.Port
	n.mu.Unlock()
	return fmt.Sprintf("nats-leaf://%s", net.JoinHostPort(host, strconv.Itoa(port)))
}

// LinkCarried is the bytes a bandwidth-bound link (HubConfig.Bandwidth)
// has carried both ways since the node started, and its bound in bytes a
// second; 0, 0 for a link without a bound.
func (n *Node) LinkCarried() (bytes, bound int64) {
	if n.cfg.Hub == nil || n.cfg.Hub.Bandwidth <= 0 {
		return 0, 0
	}
	for _, r := range n.relays {
		bytes += r.carried.Load()
	}
	return bytes, n.cfg.Hub.Bandwidth
}

// Linked reports whether this edge node's link to its hub is up.
func (n *Node) Linked() bool { return n.srv.NumLeafNodes() > 0 }

// LinkID names this edge node's link to its hub while it is up (the
// server's id of the connection; 0 while down): another id is a link
// made again, however briefly it was down.
func (n *Node) LinkID() uint64 {
	lz, err := n.srv.Leafz(nil)
	if err != nil {
		return 0
	}
	for _, l := range lz.Leafs {
		return l.ID
	}
	return 0
}
