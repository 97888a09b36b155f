package service

import (
	"context"
	"fmt"

	"github.com/agentcore/sessionlog/api"
)

// usage answers from the node's usage table, which its index keeps as
// entries pass: no session is read.
func (s *Service) usage(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.UsageRequest](data, nil)
	if err != nil {
		return nil, err
	}
	if req.Session != "" {
		if err := checkSessionID(req.Session, "/session"); err != nil {
			return nil, err
		}
	}
	if _, _, _, err := req.Checked(); err != nil {
		return nil, err
	}
	u, ok := s.cfg.Search.(UsageReporter)
	if !ok {
		return nil, &api.Error{Code: api.CodeUnavailable, Message: "usage is not kept on this node: it is kept with the search index (sessionlog serve keeps one unless -search=false)"}
	}
	select {
	case s.searches <- struct{}{}:
		defer func() { <-s.searches }()
	default:
		return nil, &api.Error{Code: api.CodeRateLimited, Message: fmt.Sprintf("%d searches and usage reports running on this node: the limit", cap(s.searches)), RetryAfterMs: 500}
	}
	return u.Usage(ctx, *req)
}
