package stream

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// SourceFrom makes the deployment's session streams take in an edge
// node's: each stream sources the stream of the same name in the edge's
// JetStream domain (over its leafnode link: JetStream keeps the position,
// and what the edge wrote while apart comes when the link is up). It is
// idempotent, and returns the streams that source the edge. The edge's
// layout must be this one's (the same streams): each session's messages
// then land in its own stream here.
func (b *Backend) SourceFrom(ctx context.Context, domain string, streams []string) ([]string, error) {
	mine := b.cfg.Streams()
	if !slices.Equal(streams, mine) {
		return nil, fmt.Errorf("%w: the edge's streams %v are not this deployment's %v (give it the same -partitions)", ErrInvalidConfig, streams, mine)
	}
	api := "$JS." + domain + ".API"
	for _, name := range mine {
		s, err := b.js.Stream(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("stream: %s: %w", name, err)
		}
		cfg := s.CachedInfo().Config
		if slices.ContainsFunc(cfg.Sources, func(src *jetstream.StreamSource) bool {
			return src.External != nil && src.External.APIPrefix == api
		}) {
			continue
		}
		cfg.Sources = append(cfg.Sources, &jetstream.StreamSource{Name: name, External: &jetstream.ExternalStream{APIPrefix: api}})
		if _, err := b.js.UpdateStream(ctx, cfg); err != nil {
			return nil, fmt.Errorf("stream: %s: source the edge %s: %w", name, domain, err)
		}
	}
	return mine, nil
}
