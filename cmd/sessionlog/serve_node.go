package main

import (
	"fmt"
	"sync"
	"time"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
)

// nodeState is what serve tells of its node beyond its streams' health
// (OpNode, shown by status): whether the node can serve, an edge's link
// refused by its hub, the edges revoked here.
type nodeState struct {
	node *cluster.Node
	name string
	// dir is the data dir, whose file system's free space is told, and
	// warned of below warnBelow percent.
	dir       string
	warnBelow float64

	mu      sync.Mutex
	revoked []string // "acme/laptop-b revoked at …: …"
}

// noteRevoked records edges revoked now.
func (s *nodeState) noteRevoked(edges []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := time.Now().UTC().Format(time.RFC3339)
	for _, e := range edges {
		s.revoked = append(s.revoked, fmt.Sprintf("edge %s revoked at %s: its link cut, its credentials refused, the tenant's streams no longer take it in", e, at))
	}
	// The last ones are what an operator looks for.
	if len(s.revoked) > 20 {
		s.revoked = s.revoked[len(s.revoked)-20:]
	}
}

// reply is the node's state as OpNode answers it.
func (s *nodeState) reply() slapi.NodeReply {
	r := slapi.NodeReply{Name: s.name}
	if err := s.node.Ready(); err != nil {
		r.Warnings = append(r.Warnings, "node not ready: "+err.Error())
	}
	if why := s.node.LinkRefused(); why != "" {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the hub refuses this edge's link (%s): it was revoked at the hub, or -hub-credentials is wrong; writes are kept here", why))
	}
	if at := s.node.StorageFull(); !at.IsZero() {
		r.Warnings = append(r.Warnings, fmt.Sprintf("storage of node %s: writes refused since %s for a full disk; they are taken again once space is freed", s.name, at.UTC().Format(time.RFC3339)))
	}
	if free, size, ok := s.node.DiskSpace(); ok && size > 0 {
		pct := 100 * float64(free) / float64(size)
		said := fmt.Sprintf("%s free of %s (%.0f%%) where the node stores its data (%s)", bytesOf(free), bytesOf(size), pct, s.dir)
		if pct < s.warnBelow {
			r.Warnings = append(r.Warnings, fmt.Sprintf("storage of node %s: only %s: writes are refused once it is full; free space or grow the volume", s.name, said))
		} else {
			r.Notes = append(r.Notes, "storage: "+said)
		}
	}
	s.mu.Lock()
	r.Notes = append(r.Notes, s.revoked...)
	s.mu.Unlock()
	return r
}
