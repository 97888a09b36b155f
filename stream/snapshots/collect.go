package snapshots

import (
	"context"
	"fmt"
	"hash/maphash"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// CollectStats counts what a collection of snapshot objects found.
type CollectStats struct {
	Objects   int    // in the store when it was read
	Named     int    // named by a head: kept
	Young     int    // named by none, written after the cutoff: kept
	Protected int    // of a session whose head is not ours to read: kept
	Deleted   int    // named by none, written before the cutoff
	Freed     uint64 // bytes of the deleted
}

// Add counts o's objects in s too.
func (s *CollectStats) Add(o CollectStats) {
	s.Objects += o.Objects
	s.Named += o.Named
	s.Young += o.Young
	s.Protected += o.Protected
	s.Deleted += o.Deleted
	s.Freed += o.Freed
}

// Collect deletes the objects no head names that were written before
// cutoff: those of saves that did not finish (a node stopped between the
// objects and the head, a head write whose outcome was never known) and
// of deletions cut short. Saves delete their own objects whenever they
// know their head was not written, so these are rare; nothing else ever
// finds them.
//
// An object is named by a head when it is one of its segments (kept or
// before), or its name begins with the head's current or previous
// snapshot followed by a dot (the skeleton, the tip, a format-2 body, and
// whatever a later format adds beside them). The heads are read before
// the objects, so a head written meanwhile names only objects written
// after the cutoff — provided the cutoff is older than the longest save.
// A head this version cannot read (a newer format, a damaged record)
// keeps every object whose name begins with its session's id: nothing is
// deleted on a guess.
func (sn *Store) Collect(ctx context.Context, cutoff time.Time) (CollectStats, error) {
	var st CollectStats
	live, protect, err := sn.named(ctx)
	if err != nil {
		return st, err
	}
	var orphans []string
	err = sn.eachObject(ctx, func(info *jetstream.ObjectInfo) {
		st.Objects++
		switch {
		case live.names(info.Name):
			st.Named++
		case protect.prefixes(info.Name):
			st.Protected++
		case !info.ModTime.Before(cutoff):
			st.Young++
		default:
			orphans = append(orphans, info.Name)
			st.Freed += info.Size
		}
	})
	if err != nil {
		return st, err
	}
	st.Deleted, err = sn.deleteObjects(ctx, orphans...)
	if st.Deleted < len(orphans) {
		st.Freed = 0 // which ones went is not known: claim none
	}
	if err != nil {
		return st, fmt.Errorf("snapshots: collect %s: %w", sn.bucket, err)
	}
	return st, nil
}

// namedSet is what the heads name: whole object names and snapshot names
// (objects "<snapshot>.<anything>"), by a 64-bit hash of each — a
// deployment's heads name millions of objects, and a collision only keeps
// an orphan.
type namedSet struct {
	seed      maphash.Seed
	objects   map[uint64]struct{}
	snapshots map[uint64]struct{}
}

func newNamedSet() namedSet {
	return namedSet{seed: maphash.MakeSeed(), objects: map[uint64]struct{}{}, snapshots: map[uint64]struct{}{}}
}

func (n namedSet) addObject(name string)   { n.objects[maphash.String(n.seed, name)] = struct{}{} }
func (n namedSet) addSnapshot(name string) { n.snapshots[maphash.String(n.seed, name)] = struct{}{} }

func (n namedSet) names(obj string) bool {
	if _, ok := n.objects[maphash.String(n.seed, obj)]; ok {
		return true
	}
	// A session id may hold dots: try every prefix ending before one.
	for i := strings.IndexByte(obj, '.'); i >= 0; {
		if _, ok := n.snapshots[maphash.String(n.seed, obj[:i])]; ok {
			return true
		}
		j := strings.IndexByte(obj[i+1:], '.')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// idSet is the sessions whose heads could not be read.
type idSet map[string]bool

func (p idSet) prefixes(obj string) bool {
	for id := range p {
		if strings.HasPrefix(obj, id+"-") {
			return true
		}
	}
	return false
}

// named reads every head: what they name, and the sessions whose heads
// this version cannot read.
func (sn *Store) named(ctx context.Context) (namedSet, idSet, error) {
	live := newNamedSet()
	protect := idSet{}
	w, err := sn.heads.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return live, protect, fmt.Errorf("snapshots: collect %s: heads: %w", sn.bucket, err)
	}
	defer w.Stop()
	err = eachInitial(ctx, w.Updates(), func(e jetstream.KeyValueEntry) {
		h, err := parseHead(e.Value())
		if err != nil || h.Object == "" {
			protect[e.Key()] = true
			return
		}
		for _, s := range []string{h.Object, h.Prev} {
			if s != "" {
				live.addSnapshot(s)
			}
		}
		for _, o := range append(h.Segments(), h.PrevSegments()...) {
			live.addObject(o)
		}
	})
	return live, protect, err
}

// eachObject calls fn with the description of every object in the store.
func (sn *Store) eachObject(ctx context.Context, fn func(*jetstream.ObjectInfo)) error {
	w, err := sn.objs.Watch(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("snapshots: collect %s: objects: %w", sn.bucket, err)
	}
	defer w.Stop()
	return eachInitial(ctx, w.Updates(), fn)
}

// eachInitial calls fn with what a watcher gives before its nil: the
// values there were when it started. It fails if ctx ends first (the
// watch is then cut short: what was read is not all).
func eachInitial[T comparable](ctx context.Context, updates <-chan T, fn func(T)) error {
	var none T
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case v := <-updates:
			if v == none {
				return ctx.Err()
			}
			fn(v)
		}
	}
}
