package blobs

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// CollectStats is what one collection of blobs found and did.
type CollectStats struct {
	Blobs      int // blobs stored when it started
	Young      int // kept: written or touched within the grace period
	Referenced int // kept: named by an entry
	Raced      int // kept: touched by an append while collection ran
	Deleted    int
	Freed      uint64 // bytes of the deleted blobs
	// Orphans are chunks no blob's meta names (two first puts of one
	// blob at once leave the loser's), purged past the grace period.
	Orphans int
	// Received is how many of Blobs came from other nodes (see
	// received.go): collected by the same rule, by purging, once
	// the node that sent one has deleted it (Held: kept until then).
	Received int
	Held     int
}

// Collect deletes the blobs of stores (nil ones skipped) no entry names
// that were last written or touched more than the grace period ago: of
// those named in only, or of every blob when only is nil (orphan chunks
// are purged then too); of each store, its own blobs and those it
// received. scan calls fn with every blob name an entry names, reading
// every entry stored when it starts (see Store for why an append in
// flight never loses its blob).
func Collect(ctx context.Context, stores []*Store, only map[string]bool, scan func(ctx context.Context, fn func(name string)) error) (CollectStats, error) {
	var st CollectStats
	var found []*collection
	for _, bl := range stores {
		if bl == nil {
			continue
		}
		c, err := bl.candidates(ctx, only, &st)
		if err != nil {
			return st, err
		}
		if len(c.own)+len(c.gone) > 0 {
			found = append(found, c)
		}
	}
	if len(found) == 0 {
		return st, nil
	}
	// Every entry stored when the candidates were read is read now: an
	// append naming one of them published before its touch expired.
	err := scan(ctx, func(name string) {
		for _, c := range found {
			for _, m := range []map[string]*blobMeta{c.own, c.gone} {
				if _, ok := m[name]; ok {
					delete(m, name)
					st.Referenced++
				}
			}
		}
	})
	if err != nil {
		return st, err
	}
	for _, c := range found {
		if err := c.bl.deleteCandidates(ctx, c, &st); err != nil {
			return st, err
		}
	}
	return st, nil
}

// collection is one store's blobs that collection may delete: its own
// and those it received, older than the grace period.
type collection struct {
	bl        *Store
	own, gone map[string]*blobMeta
}

// candidates reads the store's blobs, counts them in st, and keeps those
// past the grace period (of only's names, when given); with only nil, it
// purges orphan chunks.
func (bl *Store) candidates(ctx context.Context, only map[string]bool, st *CollectStats) (*collection, error) {
	now := bl.now()
	metas, err := bl.metas(ctx)
	if err != nil {
		return nil, err
	}
	received, err := bl.receivedMetas(ctx)
	if err != nil {
		return nil, err
	}
	st.Received += len(received)
	old := func(metas map[string]*blobMeta) map[string]*blobMeta {
		candidates := map[string]*blobMeta{}
		for name, m := range metas {
			if only != nil && !only[name] {
				continue
			}
			st.Blobs++
			if now.Sub(m.at) < bl.grace {
				st.Young++
				continue
			}
			candidates[name] = m
		}
		return candidates
	}
	// A received blob the other node still holds may be named again
	// there by a touch alone, its chunks never sent again: it is kept
	// until that node's delete marker says it no longer holds it.
	maps.DeleteFunc(received, func(_ string, m *blobMeta) bool {
		if !m.info.Deleted {
			st.Blobs++
			st.Held++
		}
		return !m.info.Deleted
	})
	c := &collection{bl: bl, own: old(metas), gone: old(received)}
	if only == nil {
		for prefix, metas := range map[string]map[string]*blobMeta{jsx.ObjChunks(bl.bucket, ""): metas, objInChunks(bl.bucket, ""): received} {
			n, err := bl.purgeOrphans(ctx, prefix, metas, now)
			st.Orphans += n
			if err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// deleteCandidates deletes what no entry named of c: a received blob by
// purging, here alone (what the node that sent it does with it is its
// own: see received.go); an own blob by its delete marker, written
// only if its meta is still the one collection read.
func (bl *Store) deleteCandidates(ctx context.Context, c *collection, st *CollectStats) error {
	for name, m := range c.gone {
		if err := bl.purgeReceived(ctx, name, m); err != nil {
			return fmt.Errorf("blobs: collect received blob %s: %w", name, err)
		}
		st.Deleted++
		st.Freed += m.info.Size
		bl.count(ctx, "collect", int64(m.info.Size))
	}
	for name, m := range c.own {
		if bl.beforeDelete != nil {
			bl.beforeDelete(name)
		}
		deleted := m.info
		deleted.Deleted = true
		deleted.Size, deleted.Chunks, deleted.Digest = 0, 0, ""
		deleted.ModTime = time.Time{}
		data, err := json.Marshal(deleted)
		if err != nil {
			return err
		}
		err = bl.writeMeta(ctx, name, m.seq, data)
		if jsx.IsWrongLastSeq(err) {
			st.Raced++ // touched (or put again) since: an append names it
			continue
		}
		if err != nil {
			return fmt.Errorf("blobs: collect blob %s: %w", name, err)
		}
		bl.forget(name)
		// The chunks of this object id only: a blob put again after the
		// marker has chunks of its own.
		if err := bl.purgeChunks(ctx, m.info.NUID); err != nil {
			return fmt.Errorf("blobs: collect blob %s: %w", name, err)
		}
		st.Deleted++
		st.Freed += m.info.Size
		bl.count(ctx, "collect", int64(m.info.Size))
	}
	return nil
}

// metas reads the meta of every blob stored (deleted ones left out).
func (bl *Store) metas(ctx context.Context) (map[string]*blobMeta, error) {
	return bl.metasOn(ctx, jsx.ObjMetas(bl.bucket), false)
}

// receivedMetas reads the meta of every blob received from another node
// (those it deleted too: see received.go).
func (bl *Store) receivedMetas(ctx context.Context) (map[string]*blobMeta, error) {
	return bl.metasOn(ctx, objInMetas(bl.bucket), true)
}

// metasOn reads the last meta on each subject of filter, by blob name.
func (bl *Store) metasOn(ctx context.Context, filter string, deleted bool) (map[string]*blobMeta, error) {
	out := map[string]*blobMeta{}
	info, err := bl.stream.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("blobs: blob store: %w", err)
	}
	if len(info.State.Subjects) == 0 {
		return out, nil
	}
	err = bl.rq.ReadAll(ctx, bl.streamName(), filter, false, func(msg jetstream.Msg, md *jetstream.MsgMetadata) error {
		m := &blobMeta{data: msg.Data(), seq: md.Sequence.Stream, at: md.Timestamp}
		if err := json.Unmarshal(msg.Data(), &m.info); err != nil {
			return fmt.Errorf("blobs: blob meta %s: %w", msg.Subject(), err)
		}
		if deleted || !m.info.Deleted {
			out[m.info.Name] = m
		}
		return nil
	})
	return out, err
}

// purgeOrphans purges the chunks, under prefix, of object ids no meta
// names whose last chunk is older than the grace period (younger ones
// may be a put whose meta is still to come).
func (bl *Store) purgeOrphans(ctx context.Context, prefix string, metas map[string]*blobMeta, now time.Time) (int, error) {
	info, err := bl.stream.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return 0, fmt.Errorf("blobs: blob chunks: %w", err)
	}
	live := make(map[string]bool, len(metas))
	for _, m := range metas {
		live[m.info.NUID] = true
	}
	n := 0
	for subject := range info.State.Subjects {
		nuid := strings.TrimPrefix(subject, prefix)
		if live[nuid] {
			continue
		}
		last, err := bl.stream.GetLastMsgForSubject(ctx, subject)
		if err != nil || now.Sub(last.Time) < bl.grace {
			continue
		}
		if err := bl.stream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (bl *Store) purgeChunks(ctx context.Context, nuid string) error {
	return bl.stream.Purge(ctx, jetstream.WithPurgeSubject(jsx.ObjChunks(bl.bucket, nuid)))
}
