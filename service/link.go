package service

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-json-experiment/json"
	"slices"
	"strings"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/stream"
)

// An edge node's link (OpLink): the hub takes in the edge's sessions
// (its streams source the edge's) when the edge is one of the tenant's
// and its stored entries went through the tenant's redaction; the reply
// names the hub's domain, which the edge's streams source in turn.

// link sources an edge node's sessions streams into the tenant's (the
// edge asks over its link, as the tenant's user it signed in as).
func (s *Service) link(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.LinkRequest](data, nil)
	if err != nil {
		return nil, err
	}
	if !cluster.ValidDomain(req.Domain) {
		return nil, &api.Error{Code: api.CodeBadRequest, Field: "/domain", Message: fmt.Sprintf("%q is not a JetStream domain name (1-64 letters, digits, '-' or '_')", req.Domain)}
	}
	if !slices.Contains(s.edgeDomains(), req.Domain) {
		return nil, &api.Error{Code: api.CodeBadRequest, Field: "/domain", Message: fmt.Sprintf("%q is not an edge of this tenant (its edges in the tenants file)", req.Domain)}
	}
	if s.b.Config().Edge {
		return nil, &api.Error{Code: api.CodeBadRequest, Field: "/domain", Message: "this node is an edge: edges link to a hub (serve -leaf-listen), not to one another"}
	}
	if err := s.coversRedaction(req.Redact); err != nil {
		return nil, err
	}
	source := s.b.SourceFrom
	if req.Resume && s.resumeDue(req.Domain) {
		source = s.b.Restart
	}
	streams, err := source(ctx, req.Domain, req.Streams)
	if errors.Is(err, stream.ErrInvalidConfig) {
		return nil, &api.Error{Code: api.CodeBadRequest, Field: "/streams", Message: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	behind, heard, err := s.b.SourceLag(ctx, req.Domain)
	if err != nil {
		return nil, err
	}
	return api.LinkReply{Streams: streams, Domain: s.cfg.Domain, Behind: behind, Heard: heard}, nil
}

// coversRedaction refuses an edge whose entries did not all go through
// the tenant's redaction rules: the hub's sourcing would store them as
// the edge holds them.
func (s *Service) coversRedaction(raw []byte) error {
	want := s.b.Config().Redact
	if want == nil {
		return nil
	}
	var have codec.RedactConfig
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &have); err != nil {
			return &api.Error{Code: api.CodeBadRequest, Field: "/redact", Message: fmt.Sprintf("not a redact config: %v", err)}
		}
	}
	if missing := have.Missing(*want); len(missing) > 0 {
		return &api.Error{Code: api.CodeBadRequest, Field: "/redact", Message: fmt.Sprintf(
			"this tenant redacts %s, which the edge's stored entries did not all go through: start the edge with -redact naming the tenant's rules, on a data dir of its own from then (what it holds was stored without them and stays on the machine)",
			strings.Join(missing, ", "))}
	}
	return nil
}

// resumeDue reports whether an edge's Resume may restart the sourcing of
// it now (ResumeEvery since the last), and notes it.
func (s *Service) resumeDue(domain string) bool {
	s.resumeMu.Lock()
	defer s.resumeMu.Unlock()
	if last, ok := s.resumed[domain]; ok && time.Since(last) < api.ResumeEvery {
		return false
	}
	if s.resumed == nil {
		s.resumed = map[string]time.Time{}
	}
	s.resumed[domain] = time.Now() // one per edge of the tenants file: bounded
	return true
}

// edgeDomains are the tenant's edges as last set.
func (s *Service) edgeDomains() []string {
	if p := s.edges.Load(); p != nil {
		return *p
	}
	return s.cfg.EdgeDomains
}

// SetEdgeDomains replaces the tenant's edges (a tenants file reloaded):
// a domain no longer listed may not link again.
func (s *Service) SetEdgeDomains(domains []string) {
	d := slices.Clone(domains)
	s.edges.Store(&d)
}
