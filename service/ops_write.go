package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
)

// The operations that write: create, append, move, label, name, fork,
// delete.

func (s *Service) create(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.CreateRequest](data, nil)
	if err != nil {
		return nil, err
	}
	if req.ID == "" {
		req.ID = s.cfg.SessionIDs.NewID()
	}
	if err := checkSessionID(req.ID, "/id"); err != nil {
		return nil, err
	}
	for _, f := range []struct{ ptr, v string }{{"/cwd", req.Cwd}, {"/parentSession", req.ParentSession}} {
		if len(f.v) > session.MaxPathLen {
			return nil, badRequest(f.ptr, "%s is %d bytes: at most %d", f.ptr[1:], len(f.v), session.MaxPathLen)
		}
	}
	if len(req.Name) > session.MaxNameLen {
		return nil, badRequest("/name", "name is %d bytes: at most %d", len(req.Name), session.MaxNameLen)
	}
	if len(req.Metadata) > session.MaxMetadataLen {
		return nil, &api.Error{Code: api.CodeTooLarge, Field: "/metadata", Message: fmt.Sprintf("metadata is %d bytes: at most %d", len(req.Metadata), session.MaxMetadataLen)}
	}
	if len(req.Metadata) > 0 && req.Metadata.Kind() != '{' {
		return nil, badRequest("/metadata", "metadata must be an object, not %s", req.Metadata.Kind())
	}
	h := session.Header{
		Version: session.CurrentVersion, ID: req.ID, Timestamp: session.FormatTime(s.cfg.Session.Clock.Now()),
		Cwd: req.Cwd, ParentSession: req.ParentSession, Metadata: session.Raw(req.Metadata),
	}
	st, err := s.b.CreateStore(ctx, h)
	if err != nil {
		return nil, err
	}
	defer st.Close(ctx)
	if req.Name != "" {
		sess, err := s.sessionOf(st, stream.OptionsFor(stream.AfterLeaf, 0))
		if err != nil {
			return nil, err
		}
		if _, err := sess.SetName(ctx, req.Name); err != nil {
			return nil, err
		}
	}
	return describe(ctx, st)
}

func (s *Service) append(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.AppendRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	if req.Upload != "" {
		staged, release, err := s.stagedAppend(ctx, req)
		if err != nil {
			return nil, err
		}
		defer release()
		r, err := s.appendEntries(ctx, staged)
		if err == nil {
			_ = s.uploads.Discard(ctx, req.Upload) // expires anyway
		}
		return r, err
	}
	return s.appendEntries(ctx, req)
}

// stagedAppend reads the append request an upload holds, within the
// memory staged appends may take together; release gives it back.
func (s *Service) stagedAppend(ctx context.Context, outer *api.AppendRequest) (*api.AppendRequest, func(), error) {
	if err := checkUploadID(outer.Upload); err != nil {
		return nil, nil, err
	}
	if len(outer.Entries) > 0 || outer.Parent != nil || outer.IfSequence != 0 {
		return nil, nil, badRequest("/upload", "an append from an upload carries its entries, parent and ifSequence in the upload")
	}
	r, size, err := s.uploads.Open(ctx, outer.Upload)
	if err != nil {
		return nil, nil, err
	}
	if size > int64(s.cfg.Limits.MaxUploadBytes) {
		return nil, nil, &api.Error{Code: api.CodeTooLarge, Field: "/upload", Message: fmt.Sprintf("upload of %d bytes is over the limit of %d", size, s.cfg.Limits.MaxUploadBytes)}
	}
	if err := s.staged.Acquire(ctx, size); err != nil {
		return nil, nil, err
	}
	release := func() { s.staged.Release(size) }
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		release()
		return nil, nil, err
	}
	req := new(api.AppendRequest)
	// Fields are named as in the uploaded request.
	if pe := decodeRequest(data, req); pe != nil {
		release()
		return nil, nil, pe
	}
	switch {
	case req.Session != "" && req.Session != outer.Session:
		release()
		return nil, nil, badRequest("/session", "the upload names session %q, the request %q", req.Session, outer.Session)
	case req.Upload != "":
		release()
		return nil, nil, badRequest("/upload", "an upload cannot name another")
	}
	req.Session = outer.Session
	return req, release, nil
}

func (s *Service) appendEntries(ctx context.Context, req *api.AppendRequest) (any, error) {
	l := s.cfg.Limits
	switch {
	case len(req.Entries) == 0:
		return nil, badRequest("/entries", "entries must hold at least one entry")
	case len(req.Entries) > l.MaxEntries:
		return nil, &api.Error{Code: api.CodeTooLarge, Field: "/entries", Message: fmt.Sprintf("%d entries; at most %d per append", len(req.Entries), l.MaxEntries)}
	}
	if req.Parent != nil && *req.Parent != "" {
		if err := session.ValidateID(*req.Parent); err != nil {
			return nil, badRequest("/parent", "%v", err)
		}
	}
	entries := make([]*session.Entry, len(req.Entries))
	for i, raw := range req.Entries {
		// Made for an error only: formatting it for every entry was an
		// append's allocation for nothing.
		field := func() string { return "/entries/" + strconv.Itoa(i) }
		if len(raw) > l.MaxEntryBytes {
			return nil, &api.Error{Code: api.CodeTooLarge, Field: field(), Message: fmt.Sprintf("entry of %d bytes is over the limit of %d", len(raw), l.MaxEntryBytes)}
		}
		e, err := codec.DecodeEntryStrict(raw)
		if err != nil {
			pe := errorOf(err)
			pe.Field = field() + pe.Field
			return nil, pe
		}
		if e.ID != "" {
			if err := session.ValidateID(e.ID); err != nil {
				return nil, &api.Error{Code: api.CodeInvalidEntry, Field: field() + "/id", Message: field() + "/id: " + PublicMessage(err.Error())}
			}
		}
		if err := session.ValidateWrite(withPlaceholders(e)); err != nil {
			// Named by its place in the request: the entry's id, if it
			// has one yet, is the server's placeholder.
			pe := &api.Error{Code: api.CodeInvalidEntry, Field: field(), Message: err.Error()}
			var fe *session.FieldError
			if errors.As(err, &fe) {
				pe.Field += fe.Pointer
				pe.Message = pe.Field + " " + fe.Reason
			}
			return nil, pe
		}
		// What the entry names counts towards its size: an entry of
		// references is no smaller, read back, than the content.
		if n := int64(len(raw)) + session.ResolvedSize(e.BlobRefs()); n > int64(l.MaxEntryBytes) {
			return nil, &api.Error{Code: api.CodeTooLarge, Field: field(), Message: fmt.Sprintf("entry of %d bytes with the blobs it names is over the limit of %d", n, l.MaxEntryBytes)}
		}
		entries[i] = e
	}
	return s.write(ctx, req.Session, func(st *stream.Store) (any, error) {
		entries := attemptCopies(entries) // as the client sent them, on every attempt
		sess, err := session.New(st, s.cfg.Session)
		if err != nil {
			return nil, err
		}
		all, err := retried(ctx, st, entries)
		if err != nil {
			return nil, err
		}
		opts := stream.OptionsFor(stream.ParentChosen, req.IfSequence)
		if all {
			// A resend of a stored append: completed as stored (a root's
			// empty parent included), AppendWith recognises it.
			opts.IfSequence = 0
		} else {
			fromLeaf, err := sess.Fill(ctx, entries, req.Parent)
			if err != nil {
				return nil, err
			}
			if fromLeaf {
				opts = stream.OptionsFor(stream.AfterLeaf, opts.IfSequence)
			}
		}
		if err := st.AppendWith(ctx, entries, opts); err != nil {
			return nil, placeEntryError(ctx, st, req, entries, err)
		}
		return appended(ctx, st, entries...)
	})
}

// placeEntryError names the member of the request behind a missing parent
// or a taken id, which the store reports by the entries' ids (ids the
// server may have given them).
func placeEntryError(ctx context.Context, st *stream.Store, req *api.AppendRequest, entries []*session.Entry, err error) error {
	missingParent, taken := errors.Is(err, session.ErrParentNotFound), errors.Is(err, session.ErrDuplicateID)
	if !missingParent && !taken {
		return err
	}
	earlier := map[string]bool{}
	for i, e := range entries {
		field := "/entries/" + strconv.Itoa(i)
		switch {
		case missingParent && e.ParentID != "" && !earlier[e.ParentID]:
			if ok, herr := st.Has(ctx, e.ParentID); herr == nil && !ok {
				if i == 0 && req.Parent != nil && *req.Parent == e.ParentID {
					field = "/parent"
				} else {
					field += "/parentId"
				}
				return &api.Error{Code: api.CodeParentNotFound, Field: field, Message: fmt.Sprintf("%s: %q is not an entry of session %q", field, e.ParentID, req.Session)}
			}
		case taken && e.ID != "":
			if ok, herr := st.Has(ctx, e.ID); herr == nil && ok || earlier[e.ID] {
				field += "/id"
				return &api.Error{Code: api.CodeDuplicateID, Field: field, Message: fmt.Sprintf("%s: %q is an entry of session %q already, with other content", field, e.ID, req.Session)}
			}
		}
		earlier[e.ID] = true
	}
	return err
}

// attemptCopies are entries as the client sent them, for one attempt to
// fill and store: what an attempt assigns (id, parent, timestamps; a
// rebase's parent) is the entry's own fields and its message's timestamp,
// so those two structs are copied and the content, which nothing on the
// way changes, is shared. (A deep clone of each entry per attempt was a
// copy of everything a client sent.)
func attemptCopies(entries []*session.Entry) []*session.Entry {
	out := make([]*session.Entry, len(entries))
	for i, e := range entries {
		c := *e
		if e.Message != nil {
			m := *e.Message
			c.Message = &m
		}
		out[i] = &c
	}
	return out
}

// retried fills what the server assigned (parent, timestamps) into entries
// whose id is already stored, so that a client resending an append it got
// no answer to — same ids, same content — finds it stored once rather
// than refused as a duplicate (an entry that differs is still refused).
// all reports that every entry is stored.
func retried(ctx context.Context, st *stream.Store, entries []*session.Entry) (all bool, err error) {
	all = true
	for _, e := range entries {
		if e.ID == "" {
			all = false
			continue
		}
		got, err := st.Get(ctx, e.ID)
		if errors.Is(err, session.ErrEntryNotFound) {
			all = false
			continue
		}
		if err != nil {
			return false, err
		}
		if e.ParentID == "" {
			e.ParentID = got.ParentID
		}
		if e.Timestamp == "" {
			e.Timestamp = got.Timestamp
		}
		if e.Message != nil && got.Message != nil && e.Message.Timestamp == 0 {
			e.Message.Timestamp = got.Message.Timestamp
		}
	}
	return all, nil
}

// withPlaceholders gives an entry the id and timestamp it will get, so
// that ValidateLoad can check the rest before anything is assigned.
func withPlaceholders(e *session.Entry) *session.Entry {
	c := *e
	if c.ID == "" {
		c.ID = "placeholder"
	}
	if c.Timestamp == "" {
		c.Timestamp = "1970-01-01T00:00:00.000Z"
	}
	return &c
}

func (s *Service) move(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.MoveRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	var opts []session.MoveOption
	if req.Summary != "" {
		opts = append(opts, session.WithBranchSummary(req.Summary, session.Raw(req.Details), req.FromHook))
	} else if len(req.Details) > 0 || req.FromHook {
		return nil, badRequest("/details", "details and fromHook belong to a branch summary: give summary too")
	}
	return s.write(ctx, req.Session, func(st *stream.Store) (any, error) {
		sess, err := s.sessionOf(st, stream.OptionsFor(stream.ParentChosen, req.IfSequence)) // a move names its target
		if err != nil {
			return nil, err
		}
		e, err := sess.MoveTo(ctx, req.Target, opts...)
		if err != nil {
			return nil, err
		}
		return appended(ctx, st, e)
	})
}

func (s *Service) label(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.LabelRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	if req.Target == "" {
		return nil, badRequest("/target", "target is required")
	}
	return s.write(ctx, req.Session, func(st *stream.Store) (any, error) {
		sess, err := s.sessionOf(st, stream.OptionsFor(stream.AfterLeaf, req.IfSequence))
		if err != nil {
			return nil, err
		}
		e, err := sess.SetLabel(ctx, req.Target, req.Label)
		if err != nil {
			return nil, err
		}
		return appended(ctx, st, e)
	})
}

func (s *Service) name(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.NameRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	return s.write(ctx, req.Session, func(st *stream.Store) (any, error) {
		sess, err := s.sessionOf(st, stream.OptionsFor(stream.AfterLeaf, req.IfSequence))
		if err != nil {
			return nil, err
		}
		e, err := sess.SetName(ctx, req.Name)
		if err != nil {
			return nil, err
		}
		return appended(ctx, st, e)
	})
}

func (s *Service) fork(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.ForkRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	point := session.FromLeaf()
	switch {
	case req.At != "" && req.Before != "":
		return nil, badRequest("/before", "give at or before, not both")
	case req.At != "":
		point = session.At(req.At)
	case req.Before != "":
		point = session.Before(req.Before)
	}
	if req.ID == "" {
		req.ID = s.cfg.SessionIDs.NewID()
	}
	if err := checkSessionID(req.ID, "/id"); err != nil {
		return nil, err
	}
	h := session.Header{Version: session.CurrentVersion, ID: req.ID, Timestamp: session.FormatTime(s.cfg.Session.Clock.Now())}
	// One copy at a time per tenant: a copy reads and writes the whole
	// branch, however large.
	select {
	case s.copies <- struct{}{}:
		defer func() { <-s.copies }()
	default:
		return nil, &api.Error{Code: api.CodeRateLimited, Message: "a fork of this tenant's is under way: one at a time", RetryAfterMs: 1000}
	}
	src, err := s.b.Header(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	h.Cwd = src.Cwd
	// The source is read from the stream, not opened: neither it nor the
	// copy is held (stream.CopyFork). What is copied is charged against
	// the tenant's write rate, as appends are: the tenant's writes after
	// a large fork wait until it is paid.
	fs, rep, err := s.b.CopyFork(ctx, req.Session, point, h, s.lim.charge)
	if err != nil {
		return nil, err
	}
	defer fs.Close(ctx)
	r, err := describe(ctx, fs)
	r.Copied = rep.Copied
	return r, err
}

func (s *Service) delete(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.SessionRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	if req.Freshness != (api.Freshness{}) {
		return nil, badRequest("/consistency", "a delete is a write: consistency and maxLagMs are for reads")
	}
	if st := s.cache.drop(req.Session, nil); st != nil {
		_ = s.cache.shut(ctx, &held{id: req.Session, st: st}) // being deleted: reported, not in the way
	}
	rep, err := s.b.DeleteSession(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	if s.cfg.Search != nil {
		// This node's index at once; the others through their watch.
		_ = s.cfg.Search.Forget(ctx, req.Session)
	}
	return api.SessionReply{Session: session.Listing{ID: req.Session}, Deleted: &api.DeletedReply{
		Messages: rep.Messages, Snapshots: rep.Snapshots, BlobsDeleted: rep.BlobsDeleted, BlobsShared: rep.BlobsShared, BlobsYoung: rep.BlobsYoung,
	}}, nil
}
