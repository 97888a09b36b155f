package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
)

// Listing: from each partition's live index (or its bucket read whole),
// pages merged across partitions.

// List implements session.Repo from the index: one record per session,
// never the entries.
// The first call reads the whole index into memory, where a watcher keeps
// it current until Close; later calls cost a binary search and the page.
func (b *Backend) List(ctx context.Context, opts session.ListOptions) (session.ListPage, error) {
	limit, err := opts.PageLimit()
	if err != nil {
		return session.ListPage{}, err
	}
	if len(b.parts) == 1 {
		return b.listPart(ctx, opts)
	}
	// Each partition's page after the cursor, merged: the page is the
	// first limit of their union, and more follow if any partition has
	// more or the union does.
	pages := make([]session.ListPage, len(b.parts))
	err = b.eachPart(func(i int, p *Backend) (err error) {
		pages[i], err = p.listPart(ctx, opts)
		return err
	})
	if err != nil {
		return session.ListPage{}, err
	}
	var all []session.SessionInfo
	more := false
	for _, pg := range pages {
		all = append(all, pg.Sessions...)
		more = more || pg.Next != ""
	}
	page, err := session.Page(all, session.ListOptions{Limit: limit})
	if err == nil && page.Next == "" && more && len(page.Sessions) > 0 {
		page.Next = session.CursorOf(page.Sessions[len(page.Sessions)-1])
	}
	return page, err
}

// listPart is List on one partition.
func (b *Backend) listPart(ctx context.Context, opts session.ListOptions) (session.ListPage, error) {
	x, err := b.liveIndex()
	if errors.Is(err, session.ErrClosed) {
		return session.ListPage{}, fmt.Errorf("stream: list: %w", err)
	}
	if err == nil {
		wctx, cancel := b.withTimeout(ctx)
		page, err := b.livePage(wctx, x, opts)
		cancel()
		if err == nil {
			return page, nil
		}
		b.dropLiveIndex(x) // stopped or slow: read directly, watch anew next time
	}
	infos, err := b.readIndex(ctx)
	if err != nil {
		return session.ListPage{}, err
	}
	return session.Page(infos, opts)
}

// livePage answers from the live index once it has taken in the bucket's
// last revision now (one request), so a listing sees every write made
// before it.
func (b *Backend) livePage(ctx context.Context, x *liveIndex, opts session.ListOptions) (session.ListPage, error) {
	st, err := b.kv.Status(ctx)
	if err != nil {
		return session.ListPage{}, err
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return session.ListPage{}, fmt.Errorf("stream: index status of type %T", st)
	}
	if err := x.waitFor(ctx, bs.StreamInfo().State.LastSeq); err != nil {
		return session.ListPage{}, err
	}
	return x.page(ctx, opts)
}

func (b *Backend) liveIndex() (*liveIndex, error) {
	b.liveMu.Lock()
	defer b.liveMu.Unlock()
	if b.closed {
		return nil, session.ErrClosed
	}
	if b.live == nil {
		x, err := startLiveIndex(b.kv)
		if err != nil {
			return nil, err
		}
		b.live = x
	}
	return b.live, nil
}

func (b *Backend) dropLiveIndex(x *liveIndex) {
	b.liveMu.Lock()
	if b.live == x {
		b.live = nil
	}
	b.liveMu.Unlock()
	x.close()
}

// closeLive stops the partition's live index; it cannot list afterwards.
func (b *Backend) closeLive() {
	b.liveMu.Lock()
	x := b.live
	b.live, b.closed = nil, true
	b.liveMu.Unlock()
	if x != nil {
		x.close()
	}
}
