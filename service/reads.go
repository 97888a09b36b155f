package service

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/outline"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/blobs"
	"github.com/agentcore/sessionlog/telemetry"
)

// Replies travel as one NATS message, so none may exceed the server's
// max payload. The reads that can grow with a session — context, tree,
// entries, list — are paged by size as well as by count: a page holds
// what fits, and next says where the following page starts. An item
// that alone cannot fit is refused with too_large, naming it.

// replyOverhead is kept free in every reply for its envelope (sequence,
// leaf, next, counts) and the NATS headers.
const replyOverhead = 4 << 10

// budget is how many bytes a reply's items may take.
func (s *Service) budget() int {
	return max(1<<10, int(s.nc.MaxPayload())-replyOverhead)
}

// pager fills a page up to a byte budget.
type pager struct {
	left int
	n    int
}

// fits takes size bytes if they fit, or if the page is still empty and
// they fit on their own; what fits on no page is an error.
func (p *pager) fits(size int, what func() string) (bool, error) {
	if size+1 <= p.left {
		p.left -= size + 1
		p.n++
		return true, nil
	}
	if p.n == 0 {
		return false, &api.Error{Code: api.CodeTooLarge, Message: fmt.Sprintf("%s is %d bytes: more than one reply can hold (%d)", what(), size, p.left)}
	}
	return false, nil
}

func (s *Service) context(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.ContextRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	if req.Offset < 0 {
		return nil, badRequest("/offset", "offset must not be negative")
	}
	return s.readAs(ctx, req.Session, req.Freshness, func(st *stream.Store) (any, error) {
		sess, err := session.New(st, s.cfg.Session)
		if err != nil {
			return nil, err
		}
		// The leaf and sequence of the reply are read together, and the
		// context is built from that leaf (a branch never changes once
		// written), so all three describe one state of the session.
		var leaf string
		var seq uint64
		var apart []api.Apart
		if err := st.ReadStateAt(ctx, func(t *session.Tree, at uint64) error {
			leaf, seq = t.Leaf(), at
			if req.At == "" {
				apart = api.ApartOf(t.Apart())
			}
			return nil
		}); err != nil {
			return nil, err
		}
		var opts []session.ContextOption
		switch {
		case req.At != "":
			opts = append(opts, session.FromEntry(req.At))
		case leaf != "":
			opts = append(opts, session.FromEntry(leaf))
		}
		bctx, span := s.tel.Tracer.Start(ctx, "sessionlog.context.build", trace.WithAttributes(telemetry.SessionKey.String(req.Session)))
		// Built with references: only the messages of the page are
		// resolved, one at a time.
		c, err := sess.BuildContext(bctx, append(opts, session.WithBlobRefs())...)
		if err != nil {
			span.RecordError(err)
			span.End()
			return nil, err
		}
		span.SetAttributes(attribute.Int("sessionlog.context.messages", len(c.Messages)), attribute.Int("sessionlog.context.path", len(c.Sources)))
		span.End()
		r, err := encodeContextPage(c, req.Offset, s.budget(), s.resolver(ctx, req.Refs))
		if err != nil {
			return nil, err
		}
		r.Leaf, r.Sequence, r.Apart = leaf, seq, apart
		return r, nil
	})
}

// resolver resolves references to content stored apart, unless the
// client asked for references (nil then).
func (s *Service) resolver(ctx context.Context, refs bool) *resolver {
	if refs {
		return nil
	}
	return &resolver{ctx: ctx, blobs: s.b.Blobs()}
}

type resolver struct {
	ctx   context.Context
	blobs *blobs.Store
}

// extra is how many bytes resolving would add to an item: checked
// against the page before anything is fetched, so that a request holds
// no more than its reply in memory.
func (r *resolver) extra(refs []session.BlobRef) int {
	if r == nil {
		return 0
	}
	return int(min(session.ResolvedSize(refs), 1<<40))
}

func (r *resolver) message(m *session.Message) (*session.Message, error) {
	if r == nil {
		return m, nil
	}
	return session.ResolveMessage(m, func(ref session.BlobRef) ([]byte, error) { return r.blobs.Get(r.ctx, ref) })
}

func (r *resolver) entry(e *session.Entry) (*session.Entry, error) {
	if r == nil {
		return e, nil
	}
	return r.blobs.Resolve(r.ctx, e)
}

// hint is what a client that got too_large for resolved content can do
// (resolved: the item held references).
func hint(resolved bool) string {
	if !resolved {
		return ""
	}
	return " with its content stored apart resolved (ask with refs: true, then read the blobs it names)"
}

// encodeContextPage is EncodeContext of the messages from offset on that
// fit in budget bytes; Next is the offset of the first left out.
func encodeContextPage(c session.Context, offset, budget int, res *resolver) (api.ContextReply, error) {
	r := api.ContextReply{ThinkingLevel: c.ThinkingLevel, ActiveTools: c.ActiveTools, Total: len(c.Messages), Offset: offset}
	if c.Model != nil {
		r.Model = &api.ModelReply{Provider: c.Model.Provider, ModelID: c.Model.ModelID}
	}
	if c.Compaction != nil {
		r.Compaction = c.Compaction.ID
	}
	p := pager{left: budget}
	msgs := []byte{'['}
	end := min(offset, len(c.Messages))
	for i := end; i < len(c.Messages); i++ {
		b, err := codec.EncodeMessage(c.Messages[i])
		if err != nil {
			return r, err
		}
		// Sized before resolving: what cannot fit is not fetched.
		grow := res.extra(session.MessageBlobRefs(c.Messages[i]))
		ok, err := p.fits(len(b)+grow+len(c.Sources[i])+3, func() string {
			return fmt.Sprintf("message %d (from entry %s)%s", i, c.Sources[i], hint(grow > 0))
		})
		if err != nil {
			return r, err
		}
		if !ok {
			r.Next = i
			break
		}
		if grow > 0 {
			m, err := res.message(c.Messages[i])
			if err != nil {
				return r, err
			}
			if b, err = codec.EncodeMessage(m); err != nil {
				return r, err
			}
		}
		if p.n > 1 {
			msgs = append(msgs, ',')
		}
		msgs = append(msgs, b...)
		end = i + 1
	}
	r.Messages = jsontext.Value(append(msgs, ']'))
	r.Sources = append([]string{}, c.Sources[min(offset, len(c.Sources)):end]...)
	return r, nil
}

func (s *Service) tree(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.TreeRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	if req.Offset < 0 {
		return nil, badRequest("/offset", "offset must not be negative")
	}
	return s.readAs(ctx, req.Session, req.Freshness, func(st *stream.Store) (any, error) {
		var r api.TreeReply
		err := st.ReadTreeAt(ctx, func(t *session.Tree, seq uint64) error {
			r.Leaf, r.Sequence, r.Apart = t.Leaf(), seq, api.ApartOf(t.Apart())
			entries, err := t.Entries()
			if err != nil {
				return err
			}
			r.Total = len(entries)
			// The outline is of the whole tree, whatever the page.
			nodes := make([]outline.Node, len(entries))
			for i, e := range entries {
				label, _ := t.Label(e.ID)
				nodes[i] = outline.FromEntry(e, label)
				nodes[i].RelativeTo(t.Header().Cwd)
			}
			ol := outline.Build(nodes, t.Leaf())
			p := pager{left: s.budget()}
			r.Nodes = []api.TreeNode{}
			for i := min(req.Offset, len(entries)); i < len(entries); i++ {
				e, o := entries[i], nodes[i]
				n := api.TreeNode{ID: e.ID, ParentID: e.ParentID, Type: string(e.Type), Timestamp: e.Timestamp, Role: o.Role, Label: o.Label,
					Summary: o.Summary, CustomType: o.CustomType, Tools: o.Tools, Calls: o.Calls, Turn: o.Turn, Thinking: o.Thinking, Error: o.Error, Row: ol.RowOf[i]}
				if ri := ol.RowOf[i]; ri >= 0 && ol.Rows[ri].Node.ID == e.ID {
					row := ol.Rows[ri]
					n.Head, n.Depth, n.Branch = true, row.Depth, row.Branch
				}
				switch e.Type {
				case session.TypeLabel:
					n.Target = e.TargetID()
				case session.TypeLeaf:
					n.Target = e.ParentID
				}
				// Members, quotes and escapes: a generous bound of the JSON.
				size := 160 + 2*(len(n.ID)+len(n.ParentID)+len(n.Type)+len(n.Timestamp)+len(n.Role)+len(n.Label)+len(n.Target)+
					len(n.Summary)+len(n.CustomType)+len(n.Turn))
				for _, tool := range append(n.Tools, n.Calls...) {
					size += 8 + 2*len(tool)
				}
				if ok, err := p.fits(size, func() string { return "tree node " + e.ID }); err != nil || !ok {
					r.Next = i
					return err
				}
				r.Nodes = append(r.Nodes, n)
			}
			return nil
		})
		return r, err
	})
}

func (s *Service) entries(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor(data, func(r *api.EntriesRequest) string { return r.Session })
	if err != nil {
		return nil, err
	}
	limit, err := s.pageLimit(req.Limit)
	if err != nil {
		return nil, err
	}
	if req.Offset < 0 {
		return nil, badRequest("/offset", "offset must not be negative")
	}
	return s.readAs(ctx, req.Session, req.Freshness, func(st *stream.Store) (any, error) {
		var r api.EntriesReply
		var page []*session.Entry
		err := st.ReadTreeAt(ctx, func(t *session.Tree, seq uint64) error {
			r.Sequence = seq
			all, err := t.Entries()
			if err != nil {
				return err
			}
			r.Total = len(all)
			start := min(req.Offset, len(all)) // no overflow near MaxInt
			page = all[start : start+min(limit, len(all)-start)]
			return nil
		})
		if err != nil {
			return nil, err
		}
		// Resolved and encoded outside the tree's lock: blobs are I/O.
		res := s.resolver(ctx, req.Refs)
		start := min(req.Offset, r.Total)
		end := start + len(page)
		r.Entries = []jsontext.Value{}
		p := pager{left: s.budget()}
		for i, e := range page {
			b, err := codec.EncodeEntry(e)
			if err != nil {
				return nil, err
			}
			// Sized before resolving: what cannot fit is not fetched.
			grow := res.extra(e.BlobRefs())
			ok, err := p.fits(len(b)+grow, func() string { return fmt.Sprintf("entry %d (%s)%s", start+i, e.ID, hint(grow > 0)) })
			if err != nil {
				return nil, err
			}
			if !ok {
				end = start + i
				break
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
			r.Entries = append(r.Entries, jsontext.Value(b))
		}
		if end < r.Total {
			r.Next = end
		}
		return encodeEntries(r), nil
	})
}

// encoded is a reply already in JSON, sent as it is.
type encoded []byte

// encodeEntries writes an entries reply as json.Marshal would, without
// checking again each entry the codec has just written: a page of
// entries is most of a framework adapter's load.
func encodeEntries(r api.EntriesReply) encoded {
	n := 64
	for _, e := range r.Entries {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"entries":[`...)
	for i, e := range r.Entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	b = append(b, `],"total":`...)
	b = strconv.AppendInt(b, int64(r.Total), 10)
	if r.Next != 0 {
		b = append(b, `,"next":`...)
		b = strconv.AppendInt(b, int64(r.Next), 10)
	}
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, r.Sequence, 10)
	return append(b, '}')
}

func (s *Service) pageLimit(n int) (int, error) {
	switch {
	case n == 0:
		return min(session.DefaultPageSize, s.cfg.Limits.MaxPage), nil
	case n < 0 || n > s.cfg.Limits.MaxPage:
		return 0, &api.Error{Code: api.CodeTooLarge, Field: "/limit", Message: fmt.Sprintf("limit %d outside 1..%d", n, s.cfg.Limits.MaxPage)}
	}
	return n, nil
}

func (s *Service) list(ctx context.Context, data []byte) (any, error) {
	req, err := decodeFor[api.ListRequest](data, nil)
	if err != nil {
		return nil, err
	}
	limit, err := s.pageLimit(req.Limit)
	if err != nil {
		return nil, err
	}
	if req.Cursor != "" {
		_, id, ok := strings.Cut(req.Cursor, "|")
		if !ok || session.ValidateSessionID(id) != nil {
			return nil, badRequest("/cursor", "cursor is not one a listing returned")
		}
	}
	filter, err := req.Filter()
	if err != nil {
		return nil, err
	}
	page, err := s.b.List(ctx, session.ListOptions{Limit: limit, Cursor: req.Cursor, Filter: filter})
	if err != nil {
		return nil, err
	}
	r := api.ListReply{Sessions: []session.Listing{}, Next: page.Next}
	p := pager{left: s.budget()}
	su, _ := s.cfg.Search.(SessionUsager)
	for i, in := range page.Sessions {
		if su != nil {
			// Tokens and cost as the usage report counts them (each API
			// call once, priced), not the record's sum of what entries say.
			if u, ok := su.SessionUsage(in.ID); ok {
				in.Tokens, in.Cost, in.UnpricedTokens = u.Tokens, u.Cost, u.UnpricedTokens
			}
		}
		size := 160 + 2*(len(in.ID)+len(in.Cwd)+len(in.ParentSession)+len(in.Name)+len(in.Created)+len(in.Updated)+len(in.Leaf)+len(in.Metadata))
		for _, l := range in.Labels {
			size += 8 + 2*len(l)
		}
		ok, err := p.fits(size, func() string { return "the listing of session " + in.ID })
		if err != nil {
			return nil, err
		}
		if !ok {
			// The rest on the next page, which starts after the last kept.
			last := page.Sessions[i-1]
			r.Next = session.CursorOf(last)
			break
		}
		r.Sessions = append(r.Sessions, in)
	}
	return r, nil
}
