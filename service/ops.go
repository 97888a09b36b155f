package service

import (
	"context"
	"errors"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

func (s *Service) ops() map[string]opFunc {
	ops := map[string]opFunc{
		api.OpCreate: s.create, api.OpOpen: s.open, api.OpAppend: s.append, api.OpMove: s.move, api.OpLabel: s.label,
		api.OpName: s.name, api.OpContext: s.context, api.OpTree: s.tree, api.OpEntries: s.entries, api.OpGet: s.get, api.OpStats: s.stats,
		api.OpFork: s.fork, api.OpList: s.list, api.OpDelete: s.delete, api.OpWait: s.wait, api.OpSearch: s.search, api.OpUsage: s.usage,
		api.OpUpload: s.upload, api.OpPutBlob: s.putBlob, api.OpBlob: s.blob,
		api.OpLiveStart: s.liveStart, api.OpLivePut: s.livePut, api.OpLiveEnd: s.liveEnd, api.OpLiveStop: s.liveStop, api.OpLiveState: s.liveState,
	}
	if s.cfg.AcceptLinks {
		ops[api.OpLink] = s.link
	}
	ops[api.OpNode] = s.node
	return ops
}

// node tells how the answering node is (Config.Node).
func (s *Service) node(context.Context, []byte) (any, error) {
	if s.cfg.Node == nil {
		return api.NodeReply{}, nil
	}
	return s.cfg.Node(), nil
}

// decodeFor decodes a request and checks its session id.
func decodeFor[T any](data []byte, id func(*T) string) (*T, error) {
	req := new(T)
	if err := decodeRequest(data, req); err != nil {
		return nil, err
	}
	if id != nil {
		if err := checkSessionID(id(req), "/session"); err != nil {
			return nil, err
		}
	}
	return req, nil
}

func checkSessionID(id, field string) error {
	if err := session.ValidateSessionID(id); err != nil {
		return &api.Error{Code: api.CodeInvalidSessionID, Field: field, Message: err.Error()}
	}
	return nil
}

// with runs fn on the session's store, up to date with the stream: reads
// see every append acknowledged before they started.
func (s *Service) with(ctx context.Context, id string, fn func(st *stream.Store) (any, error)) (any, error) {
	return s.read(ctx, id, 0, fn)
}

// read runs fn on the session's store, missing no append acknowledged
// more than maxLag before the call (0: none at all; see Freshness).
func (s *Service) read(ctx context.Context, id string, maxLag time.Duration, fn func(st *stream.Store) (any, error)) (any, error) {
	fresh := freshness{maxLag: maxLag}
	if s.staleReads.Load() {
		fresh.never = true
	}
	st, release, err := s.cache.acquire(ctx, id, fresh)
	if err != nil {
		return nil, err
	}
	defer release()
	return fn(st)
}

// readAs is read with the request's Freshness, checked.
func (s *Service) readAs(ctx context.Context, id string, f api.Freshness, fn func(st *stream.Store) (any, error)) (any, error) {
	maxLag, err := f.MaxLag()
	if err != nil {
		return nil, err
	}
	return s.read(ctx, id, maxLag, fn)
}

// write runs fn on the session's store as the cache holds it, saving the
// freshness check: appends are checked against the stream's sequence, so
// a stale store can make them fail but never store anything wrong. An
// answer a stale store could have caused is not given: fn runs again on a
// store brought up to date, and that answer stands. fn must be safe to
// run twice.
func (s *Service) write(ctx context.Context, id string, fn func(st *stream.Store) (any, error)) (any, error) {
	st, release, err := s.cache.acquire(ctx, id, freshness{never: true})
	if err != nil {
		return nil, err
	}
	r, err := fn(st)
	release()
	if err == nil || !maybeStale(err) {
		return r, err
	}
	return s.with(ctx, id, fn)
}

// maybeStale says whether err may come from a store behind the stream.
func maybeStale(err error) bool {
	for _, e := range []error{session.ErrConflict, session.ErrParentNotFound, session.ErrDuplicateID,
		session.ErrInvalidTarget, session.ErrEntryNotFound, stream.ErrRecreated} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// perCall makes a Session's appends use this call's conflict options.
type perCall struct {
	*stream.Store
	opts stream.AppendOptions
}

func (p perCall) Append(ctx context.Context, e *session.Entry) error {
	return p.AppendWith(ctx, []*session.Entry{e}, p.opts)
}

func (p perCall) AppendBatch(ctx context.Context, es []*session.Entry) error {
	return p.AppendWith(ctx, es, p.opts)
}

func (s *Service) sessionOf(st *stream.Store, opts stream.AppendOptions) (*session.Session, error) {
	return session.New(perCall{Store: st, opts: opts}, s.cfg.Session)
}

func appended(ctx context.Context, st *stream.Store, entries ...*session.Entry) (api.AppendReply, error) {
	r := api.AppendReply{Entries: make([]api.Appended, len(entries))}
	for i, e := range entries {
		r.Entries[i] = api.Appended{ID: e.ID, ParentID: e.ParentID}
	}
	// Leaf and sequence read together: a reply never pairs one state's
	// leaf with another's sequence (the checker caught that once).
	err := st.ReadStateAt(ctx, func(t *session.Tree, seq uint64) error {
		r.Leaf, r.Sequence = t.Leaf(), seq
		return nil
	})
	return r, err
}
