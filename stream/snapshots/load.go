package snapshots

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/telemetry"
)

// Loaded is a snapshot's skeleton, read and checked, and how to
// get its entries.
type Loaded struct {
	Tree       *session.Tree // partial
	Epoch, Seq uint64
	// Body reads the snapshot's entries, all of them.
	Body func(ctx context.Context) ([]*session.Entry, error)
	// Index, when the snapshot has one, reads entries of the body alone
	// (see Store.EntriesAt).
	Index *Index
	// memo is what the session's next snapshot builds on, if anything.
	memo *segMemo
}

// Load reads and verifies a session's current skeleton. A snapshot
// being replaced while it is read can fail its checks: that read is tried
// once more before the snapshot is given up.
func (sn *Store) Load(ctx context.Context, id string, head *Head) (ls *Loaded, err error) {
	ctx, end := sn.traceSnapshot(ctx, "load", id)
	defer func() { end(err) }()
	ls, err = sn.LoadOnce(ctx, id, head)
	if errors.Is(err, errSnapshotRead) {
		ls, err = sn.LoadOnce(ctx, id, nil) // the head again: it may name another now
	}
	return ls, err
}

// traceSnapshot spans and times a snapshot write or load.
func (sn *Store) traceSnapshot(ctx context.Context, op, id string) (context.Context, func(error)) {
	start := time.Now()
	ctx, span := sn.tel.Tracer.Start(ctx, "sessionlog.snapshot."+op, trace.WithAttributes(telemetry.SessionKey.String(id), telemetry.StreamKey.String(sn.stream)))
	return ctx, func(err error) {
		outcome := "ok"
		if err != nil {
			outcome = "error"
			if errors.Is(err, ErrNotFound) {
				outcome = "none"
			} else {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
		}
		sn.tel.SnapshotDuration.Record(ctx, telemetry.Seconds(start), metric.WithAttributes(attribute.String("op", op), telemetry.OutcomeKey.String(outcome)))
		span.SetAttributes(telemetry.OutcomeKey.String(outcome))
		span.End()
	}
}

var errSnapshotRead = errors.New("read failed")

// LoadOnce loads the snapshot head names (nil: the current head).
func (sn *Store) LoadOnce(ctx context.Context, id string, named *Head) (*Loaded, error) {
	if named == nil {
		got, err := sn.Current(ctx, id)
		if err != nil {
			return nil, err
		}
		named = &got
	}
	head := *named
	skel, info, err := sn.fetchObject(ctx, head.Object+".skel")
	if err != nil {
		return nil, err
	}
	// The skeleton's digest is checked, and its session's header looked
	// up, while it is decoded (a skeleton of megabytes takes as long to
	// hash as to decode): nothing decoded is used before both are known.
	var checks sync.WaitGroup
	var digestErr, epochErr error
	defer checks.Wait()
	checks.Go(func() { digestErr = checkObject(head.Object+".skel", skel, info) })
	ls, err := sn.decodeSkeleton(ctx, id, head, skel, info, &checks, &epochErr)
	checks.Wait()
	if err := errors.Join(digestErr, err, epochErr); err != nil {
		return nil, err
	}
	if ls.memo != nil {
		sn.memos.put(id, *ls.memo)
	}
	return ls, nil
}

// decodeSkeleton is loadSnapshotOnce's work on a skeleton read but not yet
// checked; it starts the check of the snapshot's epoch in checks, which
// sets epochErr.
func (sn *Store) decodeSkeleton(ctx context.Context, id string, head Head, skel []byte, info *jetstream.ObjectInfo, checks *sync.WaitGroup, epochErr *error) (*Loaded, error) {
	md := info.Metadata
	version := md[metaVersion]
	if version != strconv.Itoa(Version) && version != strconv.Itoa(OldestVersion) {
		return nil, fmt.Errorf("%w: version %q", ErrUnusable, md[metaVersion])
	}
	seq, err1 := strconv.ParseUint(md[metaSeq], 10, 64)
	epoch, err2 := strconv.ParseUint(md[metaEpoch], 10, 64)
	entries, err3 := strconv.Atoi(md[metaEntries])
	if err := errors.Join(err1, err2, err3); err != nil || epoch == 0 || seq < epoch {
		return nil, fmt.Errorf("%w: metadata %v", ErrUnusable, md)
	}
	checks.Go(func() { *epochErr = sn.checkEpoch(ctx, id, epoch) })
	// checkObject checks the bytes against the object's SHA-256 digest:
	// the metadata's checksum must be that digest (one pass over a
	// skeleton of megabytes, not two).
	if want, err := hex.DecodeString(md[metaSHA]); err != nil || info.Digest != "SHA-256="+base64.URLEncoding.EncodeToString(want) {
		return nil, fmt.Errorf("%w: skeleton checksum mismatch", ErrUnusable)
	}
	var doc skeletonDoc
	if err := msgpack.Unmarshal(skel, &doc); err != nil {
		return nil, fmt.Errorf("%w: skeleton: %w", ErrUnusable, err)
	}
	sk, err := doc.unpack()
	if err != nil {
		return nil, err
	}
	h, err := codec.DecodeHeader(doc.Header)
	if err != nil || h.ID != id || sk.IDs.Len() != entries {
		return nil, fmt.Errorf("%w: skeleton of %q with %d entries, metadata says %q with %d (%v)", ErrUnusable, hID(h), sk.IDs.Len(), id, entries, err)
	}
	t, err := session.NewPartialTree(*h, sk)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	ls := &Loaded{Tree: t, Epoch: epoch, Seq: seq, Index: bodyIndexOf(&doc, sk.IDs.Len())}
	if version == strconv.Itoa(OldestVersion) {
		ls.Body = sn.oneBody(id, head.Object+".body", md[metaBodySHA])
		return ls, nil
	}
	if segsDigest(doc.Segs) != md[metaBodySHA] || segsEnd(doc.Segs) != entries || !contiguous(doc.Segs) {
		// Found when the entries are read, as a bad body of format 2 is.
		ls.Index = nil
		ls.Body = func(context.Context) ([]*session.Entry, error) {
			return nil, fmt.Errorf("%w: body checksum or segments mismatch", ErrUnusable)
		}
		return ls, nil
	}
	// The next snapshot of the session builds on this one (once checked).
	ls.memo = &segMemo{epoch: epoch, object: head.Object, segs: doc.Segs}
	ls.Body = func(ctx context.Context) ([]*session.Entry, error) {
		data := append(append(make([]byte, 0, len(doc.Header)+1+int(segsSize(doc.Segs))), doc.Header...), '\n')
		for _, seg := range doc.Segs {
			part, info, err := sn.getObject(ctx, seg.Object)
			if err != nil {
				return nil, err
			}
			// getObject checked the bytes against the object's digest.
			if info.Digest != "SHA-256="+base64.URLEncoding.EncodeToString(seg.SHA) {
				return nil, fmt.Errorf("%w: body segment %s checksum mismatch", ErrUnusable, seg.Object)
			}
			data = append(data, part...)
		}
		return decodeBody(data, id)
	}
	return ls, nil
}

// oneBody reads a body of format 2, one object.
func (sn *Store) oneBody(id, name, sha string) func(ctx context.Context) ([]*session.Entry, error) {
	return func(ctx context.Context) ([]*session.Entry, error) {
		data, _, err := sn.getObject(ctx, name)
		if err != nil {
			return nil, err
		}
		if shaHex(data) != sha {
			return nil, fmt.Errorf("%w: body checksum mismatch", ErrUnusable)
		}
		return decodeBody(data, id)
	}
}

// decodeBody decodes a body, the session as a pi file.
func decodeBody(data []byte, id string) ([]*session.Entry, error) {
	ld, err := codec.DecodeFile(data, "snapshot "+id, codec.Strict, codec.WithRunner(parallel.Lines))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	return ld.Tree.Entries()
}

func hID(h *session.Header) string {
	if h == nil {
		return ""
	}
	return h.ID
}
