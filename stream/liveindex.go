package stream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/session"
)

// liveIndex is the session index held in memory, sorted as listings are
// (most recently updated first, then by id), and kept current by a
// watcher of the index bucket: the first List of a backend reads the
// bucket once, later ones cost a binary search and a copy of the page.
type liveIndex struct {
	ready  chan struct{} // closed once the bucket's current values are in
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.RWMutex
	byID    map[string]*session.SessionInfo
	sorted  []*session.SessionInfo
	applied uint64        // the bucket's last revision taken in
	advance chan struct{} // closed and replaced when applied grows
	err     error         // the watcher stopped: the index is no longer current
}

// before orders listings: Updated descending, then ID ascending.
func before(a, b *session.SessionInfo) int {
	if c := cmp.Compare(b.Updated, a.Updated); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

func startLiveIndex(kv jetstream.KeyValue) (*liveIndex, error) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := kv.WatchAll(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("stream: watch index: %w", err)
	}
	x := &liveIndex{ready: make(chan struct{}), cancel: cancel, byID: map[string]*session.SessionInfo{}, advance: make(chan struct{})}
	x.wg.Add(1)
	go x.follow(ctx, w)
	return x, nil
}

func (x *liveIndex) follow(ctx context.Context, w jetstream.KeyWatcher) {
	defer x.wg.Done()
	defer w.Stop()
	ready := false
	for {
		select {
		case <-ctx.Done():
			x.fail(ctx.Err(), ready)
			return
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				x.fail(errors.New("stream: index watcher stopped"), ready)
				return
			case e == nil:
				if !ready {
					ready = true
					x.sortAll()
					close(x.ready)
				}
			case e.Operation() != jetstream.KeyValuePut:
				x.remove(e.Key(), e.Revision())
			default:
				var rec indexRecord
				if json.Unmarshal(e.Value(), &rec) != nil {
					x.remove("", e.Revision()) // not ours: only the revision counts
					continue
				}
				x.put(rec.SessionInfo, e.Revision())
			}
		}
	}
}

func (x *liveIndex) fail(err error, ready bool) {
	x.mu.Lock()
	x.err = err
	close(x.advance) // waiters see the error
	x.advance = make(chan struct{})
	x.mu.Unlock()
	if !ready {
		close(x.ready)
	}
}

func (x *liveIndex) put(info session.SessionInfo, rev uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(info.ID)
	in := &info
	x.byID[info.ID] = in
	if x.sorted != nil {
		// Live: one insertion. (While loading, sortAll orders them once:
		// inserting each would make the load quadratic.)
		i, _ := slices.BinarySearchFunc(x.sorted, in, before)
		x.sorted = slices.Insert(x.sorted, i, in)
	}
	x.took(rev)
}

// sortAll orders what the initial load took in.
func (x *liveIndex) sortAll() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sorted = make([]*session.SessionInfo, 0, len(x.byID))
	for _, in := range x.byID {
		x.sorted = append(x.sorted, in)
	}
	slices.SortFunc(x.sorted, before)
}

func (x *liveIndex) remove(id string, rev uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(id)
	x.took(rev)
}

// took records a revision taken in. Called with mu held.
func (x *liveIndex) took(rev uint64) {
	if rev > x.applied {
		x.applied = rev
		close(x.advance)
		x.advance = make(chan struct{})
	}
}

// waitFor blocks until the index has taken in revision rev: a listing
// then reflects every index write made before it started.
func (x *liveIndex) waitFor(ctx context.Context, rev uint64) error {
	select {
	case <-x.ready:
	case <-ctx.Done():
		return fmt.Errorf("stream: read index: %w", ctx.Err())
	}
	for {
		x.mu.RLock()
		applied, advance, err := x.applied, x.advance, x.err
		x.mu.RUnlock()
		switch {
		case err != nil:
			return err
		case applied >= rev:
			return nil
		}
		select {
		case <-advance:
		case <-ctx.Done():
			return fmt.Errorf("stream: read index: %w", ctx.Err())
		}
	}
}

func (x *liveIndex) removeLocked(id string) {
	old := x.byID[id]
	if old == nil {
		return
	}
	delete(x.byID, id)
	if x.sorted == nil {
		return // still loading
	}
	if i, found := slices.BinarySearchFunc(x.sorted, old, before); found {
		x.sorted = slices.Delete(x.sorted, i, i+1)
	}
}

// page cuts a listing page after cursor, as session.Page does (call
// waitFor first).
func (x *liveIndex) page(ctx context.Context, opts session.ListOptions) (session.ListPage, error) {
	limit, err := opts.PageLimit()
	if err != nil {
		return session.ListPage{}, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.err != nil {
		return session.ListPage{}, x.err
	}
	start := 0
	if opts.Cursor != "" {
		updated, id := opts.Cursor, ""
		if i := strings.LastIndexByte(opts.Cursor, '|'); i >= 0 {
			updated, id = opts.Cursor[:i], opts.Cursor[i+1:]
		}
		// The first entry after the cursor's position, found or not.
		at := &session.SessionInfo{Updated: updated, ID: id}
		i, found := slices.BinarySearchFunc(x.sorted, at, before)
		if found {
			i++
		}
		start = i
	}
	end := min(start+limit, len(x.sorted))
	page := session.ListPage{Sessions: make([]session.SessionInfo, 0, end-start)}
	for _, in := range x.sorted[start:end] {
		page.Sessions = append(page.Sessions, *in)
	}
	if end < len(x.sorted) {
		last := x.sorted[end-1]
		page.Next = session.CursorOf(*last)
	}
	return page, nil
}

func (x *liveIndex) close() {
	x.cancel()
	x.wg.Wait()
}
