package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// get answers one entry by its id: what a reader that knows the entry
// (a search hit, a tree node) asks for, without paging through the rest.
func (s *Service) get(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.GetRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	if err := session.ValidateID(req.Entry); err != nil {
		return nil, badRequest("/entry", "%v", err)
	}
	return s.readAs(ctx, req.Session, req.Freshness, func(st *stream.Store) (any, error) {
		var r api.GetReply
		var e *session.Entry
		err := st.ReadTreeAt(ctx, func(t *session.Tree, seq uint64) error {
			r.Sequence = seq
			var err error
			e, err = t.Get(req.Entry)
			return err
		})
		if errors.Is(err, session.ErrEntryNotFound) {
			return nil, &api.Error{Code: api.CodeEntryNotFound, Field: "/entry", Message: fmt.Sprintf("no entry %q in session %q", req.Entry, req.Session)}
		}
		if err != nil {
			return nil, err
		}
		// Resolved and encoded outside the tree's lock: blobs are I/O.
		res := s.resolver(ctx, req.Refs)
		grow := res.extra(e.BlobRefs())
		b, err := codec.EncodeEntry(e)
		if err != nil {
			return nil, err
		}
		p := pager{left: s.budget()}
		if _, err := p.fits(len(b)+grow, func() string { return fmt.Sprintf("entry %s%s", e.ID, hint(grow > 0)) }); err != nil {
			return nil, err
		}
		if grow > 0 {
			full, err := res.entry(e)
			if err != nil {
				return nil, err
			}
			if b, err = codec.EncodeEntry(full); err != nil {
				return nil, err
			}
		}
		r.Entry = jsontext.Value(b)
		return r, nil
	})
}
