package stream

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

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
	// One link at a time on this node; nodes' links racing each other
	// are caught below.
	b.linkMu.Lock()
	defer b.linkMu.Unlock()
	api := "$JS." + domain + ".API"
	for i, name := range mine {
		// Session messages only: a read barrier has no message id for
		// the other side's duplicate window to know it by, and two
		// nodes sourcing each other would pass it back and forth.
		filter := b.cfg.partition(i).sessionsFilter()
		ours := func(src *jetstream.StreamSource) bool {
			return src.External != nil && src.External.APIPrefix == api
		}
		sourced := func(cfg jetstream.StreamConfig) bool {
			return slices.ContainsFunc(cfg.Sources, func(src *jetstream.StreamSource) bool {
				return ours(src) && src.FilterSubject == filter
			})
		}
		// A stream's config is replaced whole: two edges linking at once
		// (on two nodes) could each write the list without the other's
		// source. So the source is looked for again after the update, and
		// added again until it stays.
		for attempt := 0; ; attempt++ {
			s, err := b.js.Stream(ctx, name)
			if err != nil {
				return nil, fmt.Errorf("stream: %s: %w", name, err)
			}
			cfg := s.CachedInfo().Config
			if sourced(cfg) {
				break
			}
			if attempt > 0 {
				// Another node's link changed the stream meanwhile: let
				// it finish (a random pause, so that two do not meet again).
				select {
				case <-time.After(time.Duration(rand.Int64N(int64(50*time.Millisecond) << min(attempt, 4)))):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if attempt == maxLinkAttempts {
				return nil, fmt.Errorf("stream: %s: the source of the edge %s did not stay (%d tries): other links change the stream meanwhile; ask again", name, domain, attempt)
			}
			cfg.Sources = append(slices.DeleteFunc(slices.Clone(cfg.Sources), ours),
				&jetstream.StreamSource{Name: name, FilterSubject: filter, External: &jetstream.ExternalStream{APIPrefix: api}})
			// nats.go says "not supported" when the config the server
			// answers with has no sources: another update's, meanwhile.
			if _, err := b.js.UpdateStream(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrStreamSourceNotSupported) {
				return nil, fmt.Errorf("stream: %s: source the edge %s: %w", name, domain, err)
			}
		}
	}
	return mine, nil
}

// maxLinkAttempts bounds SourceFrom's updates of one stream.
const maxLinkAttempts = 8

// Unsource stops the deployment's session streams from sourcing the edge
// of the given domain (revoked): what they took in stays. It is
// idempotent, and returns the streams it changed.
func (b *Backend) Unsource(ctx context.Context, domain string) ([]string, error) {
	b.linkMu.Lock()
	defer b.linkMu.Unlock()
	api := "$JS." + domain + ".API"
	var changed []string
	for _, name := range b.cfg.Streams() {
		for attempt := 0; ; attempt++ {
			s, err := b.js.Stream(ctx, name)
			if err != nil {
				return changed, fmt.Errorf("stream: %s: %w", name, err)
			}
			cfg := s.CachedInfo().Config
			kept := slices.DeleteFunc(slices.Clone(cfg.Sources), func(src *jetstream.StreamSource) bool {
				return src.External != nil && src.External.APIPrefix == api
			})
			if len(kept) == len(cfg.Sources) {
				break
			}
			if attempt == maxLinkAttempts {
				return changed, fmt.Errorf("stream: %s: the source of the edge %s stays (%d tries): other links change the stream meanwhile; ask again", name, domain, attempt)
			}
			cfg.Sources = kept
			if len(kept) == 0 {
				cfg.Sources = nil
			}
			if _, err := b.js.UpdateStream(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrStreamSourceNotSupported) {
				return changed, fmt.Errorf("stream: %s: stop sourcing the edge %s: %w", name, domain, err)
			}
			if attempt == 0 {
				changed = append(changed, name)
			}
		}
	}
	return changed, nil
}
