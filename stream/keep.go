package stream

// Sessions an edge keeps on the machine (WithKeepLocal): on subjects of
// their own (<prefix>.<id>.l, see layout.go) that the hub does not take
// in, naming blobs in a store that does not sync.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream/blobs"
)

// SyncRules choose which sessions made on an edge go to its hub: those
// matching a rule of Only (all when Only is empty), but for those
// matching a rule of Except, which stay on the machine. A rule is
// "cwd=PATH" (the session's working directory is PATH or under it) or
// "agent=NAME" (session.AgentOf). The choice is made when a session is
// created and holds for its life: it is kept on subjects the hub does
// not take in (see layout.go), naming blobs in a store that does not
// sync (Config.LocalBlobBucket). Sessions made elsewhere (the hub's) go
// up when written here.
type SyncRules struct {
	Only, Except []string
}

// Metadata keys of the rules, in the streams of an edge.
const (
	metaSyncOnly   = "sessionlog.sync-only"
	metaSyncExcept = "sessionlog.keep-local"
)

// Validate checks each rule.
func (r SyncRules) Validate() error {
	for _, rule := range append(slices.Clone(r.Only), r.Except...) {
		kind, val, _ := strings.Cut(rule, "=")
		switch {
		case kind == "cwd" && strings.HasPrefix(val, "/") && !strings.Contains(val, ","):
		case kind == "agent" && slices.Contains(session.Agents, val):
		case kind == "agent":
			return fmt.Errorf("%w: sync rule %q: the agents are %s", ErrInvalidConfig, rule, strings.Join(session.Agents, ", "))
		default:
			return fmt.Errorf("%w: sync rule %q: want cwd=/absolute/path (no comma) or agent=NAME", ErrInvalidConfig, rule)
		}
	}
	return nil
}

// none reports whether the rules keep nothing local.
func (r SyncRules) none() bool { return len(r.Only) == 0 && len(r.Except) == 0 }

// keepsLocal reports whether a session of header h stays on the machine.
func (r SyncRules) keepsLocal(h session.Header) bool {
	if len(r.Only) > 0 && !slices.ContainsFunc(r.Only, func(rule string) bool { return matches(rule, h) }) {
		return true
	}
	return slices.ContainsFunc(r.Except, func(rule string) bool { return matches(rule, h) })
}

func matches(rule string, h session.Header) bool {
	kind, val, _ := strings.Cut(rule, "=")
	switch kind {
	case "cwd":
		return h.Cwd == val || strings.HasPrefix(h.Cwd, strings.TrimSuffix(val, "/")+"/")
	case "agent":
		return session.AgentOf(h) == val
	}
	return false
}

// metadata records the rules in a stream's metadata (md), and reads
// them back.
func (r SyncRules) record(md map[string]string) {
	for key, rules := range map[string][]string{metaSyncOnly: r.Only, metaSyncExcept: r.Except} {
		if len(rules) == 0 {
			delete(md, key)
		} else {
			md[key] = strings.Join(rules, ",")
		}
	}
}

func syncRulesOf(md map[string]string) SyncRules {
	var r SyncRules
	if v := md[metaSyncOnly]; v != "" {
		r.Only = strings.Split(v, ",")
	}
	if v := md[metaSyncExcept]; v != "" {
		r.Except = strings.Split(v, ",")
	}
	return r
}

// BlobsForPuts is the store a blob put before any entry names it goes
// into: on an edge that keeps sessions local, the one that does not sync
// (the blob goes up when an entry of a session that syncs names it);
// elsewhere, the deployment's.
func (b *Backend) BlobsForPuts() *blobs.Store {
	if !b.cfg.syncRules.none() && b.localBlobs != nil {
		return b.localBlobs
	}
	return b.blobs
}

// setKept records whether the session stays on this edge.
func (s *Store) setKept(kept bool) {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	s.kept, s.keptKnown = kept, true
	if kept {
		s.subject1 = s.b.cfg.localSubject(s.id)
	}
}

// keepsLocal reports whether the session stays on this edge: on an edge,
// whether it has messages on the subject of sessions kept here (read
// once); elsewhere, never.
func (s *Store) keepsLocal(ctx context.Context) (bool, error) {
	if !s.b.cfg.edge {
		return false, nil
	}
	s.keptMu.Lock()
	known, kept := s.keptKnown, s.kept
	s.keptMu.Unlock()
	if known {
		return kept, nil
	}
	m, err := s.b.rq.LastOf(ctx, s.b.cfg.Stream, s.b.cfg.localSubject(s.id))
	if err != nil {
		return false, fmt.Errorf("stream: %s: is it kept here: %w", s.id, err)
	}
	s.setKept(m != nil)
	return m != nil, nil
}

// blobsFor is the store of the blobs the session names.
func (s *Store) blobsFor(kept bool) *blobs.Store {
	if kept && s.b.localBlobs != nil {
		return s.b.localBlobs
	}
	return s.b.blobs
}
