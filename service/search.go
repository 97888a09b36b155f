package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/search"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// search answers from the node's index; hits of sessions deleted since
// they were indexed are left out. Within a session it searches the scope
// the request asks for, read from the session's tree: the branch ending
// at an entry (by default the leaf's), a subtree, or every branch.
func (s *Service) search(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.SearchRequest](data, nil)
	if err != nil {
		return nil, err
	}
	if req.Session != "" {
		if err := checkSessionID(req.Session, "/session"); err != nil {
			return nil, err
		}
	}
	scope, err := req.Scoped()
	if err != nil {
		return nil, err
	}
	if s.cfg.Search == nil {
		return nil, &api.Error{Code: api.CodeUnavailable, Message: "search is not enabled on this node (sessionlog serve keeps an index unless -search=false)"}
	}
	select {
	case s.searches <- struct{}{}:
		defer func() { <-s.searches }()
	default:
		return nil, &api.Error{Code: api.CodeRateLimited, Message: fmt.Sprintf("%d searches running on this node: the limit", cap(s.searches)), RetryAfterMs: 500}
	}
	filter, err := search.FilterOf(req)
	if err != nil {
		return nil, err
	}
	q := search.Query{Text: req.Query, Session: req.Session, Limit: req.Limit, Offset: req.Offset, Filter: filter}
	if scope != api.ScopeSession {
		sc, err := s.scopeOf(ctx, req, scope)
		if err != nil {
			return nil, err
		}
		q.Scope = &sc
	}
	return s.cfg.Search.Search(ctx, q, s.b.Exists)
}

// scopeOf reads the entries of req's scope from the session's tree, as
// fresh as req asks.
func (s *Service) scopeOf(ctx context.Context, req *api.SearchRequest, scope string) (search.Scope, error) {
	var sc search.Scope
	_, err := s.readAs(ctx, req.Session, req.Freshness, func(st *stream.Store) (any, error) {
		return nil, st.ReadTreeAt(ctx, func(t *session.Tree, _ uint64) (err error) {
			sc, err = search.ScopeOf(t, scope, req.At)
			return err
		})
	})
	if errors.Is(err, session.ErrEntryNotFound) {
		return sc, &api.Error{Code: api.CodeEntryNotFound, Field: "/at", Message: fmt.Sprintf("no entry %q in session %q", req.At, req.Session)}
	}
	return sc, err
}
