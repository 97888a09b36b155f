package stream

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/stream/blobs"
)

// CollectBlobs deletes the blobs no entry of any session names that were
// last written or touched more than the grace period ago (see blobs.Store for
// why an append in flight never loses its blob). It reads every stored
// entry's headers once: run it rarely (serve runs it hourly).
func (b *Backend) CollectBlobs(ctx context.Context) (blobs.CollectStats, error) {
	return b.collect(ctx, nil)
}

// collect is CollectBlobs of the blobs named in only, or of every blob
// when only is nil (see blobs.Collect): of each of the node's stores (an
// edge's kept on the machine too), against every partition's entries.
func (b *Backend) collect(ctx context.Context, only map[string]bool) (blobs.CollectStats, error) {
	return blobs.Collect(ctx, []*blobs.Store{b.blobs, b.localBlobs}, only, func(ctx context.Context, fn func(name string)) error {
		for _, p := range b.parts {
			if err := p.scanBlobNames(ctx, fn); err != nil {
				return err
			}
		}
		return nil
	})
}

// scanBlobNames calls fn with every blob name an entry of this partition
// names, reading headers only.
func (b *Backend) scanBlobNames(ctx context.Context, fn func(name string)) error {
	info, err := b.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream: scan %s: %w", b.cfg.Stream, err)
	}
	if info.State.Msgs == 0 {
		return nil
	}
	return b.rq.ReadAll(ctx, b.cfg.Stream, b.cfg.Prefix+".>", true, func(msg jetstream.Msg, _ *jetstream.MsgMetadata) error {
		if names := msg.Headers().Get(blobs.Header); names != "" {
			for _, n := range strings.Split(names, ",") {
				fn(n)
			}
		}
		return nil
	})
}
