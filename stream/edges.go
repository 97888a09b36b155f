package stream

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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
	b.linkMu.Lock()
	defer b.linkMu.Unlock()
	ours := sourcesOf(domain)
	for i, name := range mine {
		// Session messages only: a read barrier has no message id for
		// the other side's duplicate window to know it by, and two
		// nodes sourcing each other would pass it back and forth.
		filter := b.cfg.partition(i).sessionsFilter()
		_, err := b.changeSources(ctx, name, "source the edge "+domain, func(srcs []*jetstream.StreamSource) ([]*jetstream.StreamSource, bool) {
			if slices.ContainsFunc(srcs, func(src *jetstream.StreamSource) bool { return ours(src) && src.FilterSubject == filter }) {
				return nil, true
			}
			return append(slices.DeleteFunc(slices.Clone(srcs), ours),
				&jetstream.StreamSource{Name: name, FilterSubject: filter, External: &jetstream.ExternalStream{APIPrefix: domainAPI(domain)}}), false
		})
		if err != nil {
			return nil, err
		}
	}
	return mine, nil
}

// Unsource stops the deployment's session streams from sourcing the edge
// of the given domain (revoked): what they took in stays. It is
// idempotent, and returns the streams it changed.
func (b *Backend) Unsource(ctx context.Context, domain string) ([]string, error) {
	b.linkMu.Lock()
	defer b.linkMu.Unlock()
	ours := sourcesOf(domain)
	var changed []string
	for _, name := range b.cfg.Streams() {
		did, err := b.changeSources(ctx, name, "stop sourcing the edge "+domain, func(srcs []*jetstream.StreamSource) ([]*jetstream.StreamSource, bool) {
			kept := slices.DeleteFunc(slices.Clone(srcs), ours)
			return kept, len(kept) == len(srcs)
		})
		if did {
			changed = append(changed, name)
		}
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// maxLinkAttempts bounds the updates of one stream's sources.
const maxLinkAttempts = 8

// changeSources updates stream name's sources to what want makes of them,
// until want says they are as it wants them (done); it reports whether
// it updated the stream. Callers hold linkMu: one change at a time on
// this node. A stream's config is replaced whole, so changes of two
// nodes at once (two edges linking) could each write the list without
// the other's: the sources are looked at again after each update, and
// changed again (after a random pause, so that two do not meet again)
// until they stay.
func (b *Backend) changeSources(ctx context.Context, name, what string, want func([]*jetstream.StreamSource) (next []*jetstream.StreamSource, done bool)) (changed bool, err error) {
	for attempt := 0; ; attempt++ {
		s, err := b.js.Stream(ctx, name)
		if err != nil {
			return changed, fmt.Errorf("stream: %s: %w", name, err)
		}
		cfg := s.CachedInfo().Config
		next, done := want(cfg.Sources)
		if done {
			return changed, nil
		}
		if attempt > 0 {
			select {
			case <-time.After(time.Duration(rand.Int64N(int64(50*time.Millisecond) << min(attempt, 4)))):
			case <-ctx.Done():
				return changed, ctx.Err()
			}
		}
		if attempt == maxLinkAttempts {
			return changed, fmt.Errorf("stream: %s: %s: the change did not stay (%d tries): other links change the stream meanwhile; ask again", name, what, attempt)
		}
		cfg.Sources = next
		if len(next) == 0 {
			cfg.Sources = nil
		}
		// nats.go says "not supported" when the config the server
		// answers with has no sources: another update's, meanwhile.
		if _, err := b.js.UpdateStream(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrStreamSourceNotSupported) {
			return changed, fmt.Errorf("stream: %s: %s: %w", name, what, err)
		}
		changed = true
	}
}

// domainAPI is the JetStream API prefix of a domain, by which a stream
// names a source in it; domainOf reads the domain back.
func domainAPI(domain string) string { return "$JS." + domain + ".API" }

func domainOf(api string) string {
	return strings.TrimSuffix(strings.TrimPrefix(api, "$JS."), ".API")
}

// sourcesOf matches a stream's sources in domain.
func sourcesOf(domain string) func(*jetstream.StreamSource) bool {
	api := domainAPI(domain)
	return func(src *jetstream.StreamSource) bool { return src.External != nil && src.External.APIPrefix == api }
}
