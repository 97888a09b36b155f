package service

import (
	"context"
	"fmt"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/search"
)

// search answers from the node's index; hits of sessions deleted since
// they were indexed are left out.
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
	if s.cfg.Search == nil {
		return nil, &api.Error{Code: api.CodeUnavailable, Message: "search is not enabled on this node (sessionlog serve keeps an index unless -search=false)"}
	}
	select {
	case s.searches <- struct{}{}:
		defer func() { <-s.searches }()
	default:
		return nil, &api.Error{Code: api.CodeRateLimited, Message: fmt.Sprintf("%d searches running on this node: the limit", cap(s.searches)), RetryAfterMs: 500}
	}
	q := search.Query{Text: req.Query, Session: req.Session, Limit: req.Limit, Offset: req.Offset}
	return s.cfg.Search.Search(ctx, q, s.b.Exists)
}
