package stream

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentcore/sessionlog/stream/blobs"
	"github.com/agentcore/sessionlog/stream/internal/jsx"
)

// SourceFrom makes the deployment's session streams take in those of
// the node of the given JetStream domain, over its leafnode link
// (JetStream keeps the position, and what was written while apart comes
// when the link is up): a hub takes in an edge's, an edge its hub's
// (see layout.go for which subjects, onto which). It is idempotent, and
// returns the streams that source the other node. The other node's
// streams must be this one's (the same partitions and prefix): each
// session's messages then land in its own stream here.
func (b *Backend) SourceFrom(ctx context.Context, domain string, streams []string) ([]string, error) {
	mine := b.cfg.Streams()
	if !slices.Equal(streams, mine) {
		return nil, fmt.Errorf("%w: the other node's streams %v are not this deployment's %v (give it the same -partitions)", ErrInvalidConfig, streams, mine)
	}
	if b.cfg.typed {
		return nil, fmt.Errorf("%w: this deployment keeps a subject per entry type (made before a subject per session): it cannot sync with other nodes", ErrInvalidConfig)
	}
	b.linkMu.Lock()
	defer b.linkMu.Unlock()
	for i, name := range mine {
		if err := b.source(ctx, name, domain, b.cfg.partition(i).takeIn()); err != nil {
			return nil, err
		}
	}
	// The blobs entries name come along (see blobs_received.go).
	if err := b.source(ctx, jsx.ObjStream(b.cfg.BlobBucket()), domain, blobs.TakeIn(b.cfg.BlobBucket(), b.cfg.edge)); err != nil {
		return nil, err
	}
	return mine, nil
}

// source makes stream name take in the stream of the same name in the
// given domain, through the subject transforms take.
func (b *Backend) source(ctx context.Context, name, domain string, take []jetstream.SubjectTransformConfig) error {
	ours := sourcesOf(domain)
	_, err := b.changeSources(ctx, name, "source "+domain, func(srcs []*jetstream.StreamSource) ([]*jetstream.StreamSource, bool) {
		if slices.ContainsFunc(srcs, func(src *jetstream.StreamSource) bool {
			return ours(src) && src.FilterSubject == "" && slices.Equal(src.SubjectTransforms, take)
		}) {
			return nil, true
		}
		return append(slices.DeleteFunc(slices.Clone(srcs), ours),
			&jetstream.StreamSource{Name: name, SubjectTransforms: take, External: &jetstream.ExternalStream{APIPrefix: domainAPI(domain)}}), false
	})
	return err
}

// Restart starts this deployment's sourcing of the node of the given
// domain again at once, where it stood: JetStream retries a source that
// lost the other side at growing intervals (up to two minutes), and one
// removed and added again resumes from the position it recorded.
func (b *Backend) Restart(ctx context.Context, domain string, streams []string) ([]string, error) {
	if _, err := b.Unsource(ctx, domain); err != nil {
		return nil, err
	}
	return b.SourceFrom(ctx, domain, streams)
}

// Unsource stops the deployment's session streams from sourcing the edge
// of the given domain (revoked): what they took in stays. It is
// idempotent, and returns the streams it changed.
func (b *Backend) Unsource(ctx context.Context, domain string) ([]string, error) {
	b.linkMu.Lock()
	defer b.linkMu.Unlock()
	ours := sourcesOf(domain)
	var changed []string
	for _, name := range append(b.cfg.Streams(), jsx.ObjStream(b.cfg.BlobBucket())) {
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

// takeIn is what partition c takes in of the other node's stream, and
// onto which subjects: an edge takes the hub's sessions onto subjects of
// their own, a hub takes what an edge wrote (not what it had taken in)
// onto the session's. Session messages only: a read barrier has no
// message id for the other side's duplicate window to know it by.
func (c Config) takeIn() []jetstream.SubjectTransformConfig {
	if c.edge {
		return []jetstream.SubjectTransformConfig{{Source: c.Prefix + ".*", Destination: c.Prefix + ".{{wildcard(1)}}." + fromHub}}
	}
	return []jetstream.SubjectTransformConfig{{Source: c.Prefix + ".*." + writtenHere, Destination: c.Prefix + ".{{wildcard(1)}}"}}
}

// SourceLag is how many messages of the node of the given domain this
// deployment's streams (sessions and blobs) have still to take in, as
// JetStream's sourcing counts them, and whether every one of them has
// heard from that node lately (the count is the one when it last did:
// a source hears a heartbeat a second while it runs).
func (b *Backend) SourceLag(ctx context.Context, domain string) (lag uint64, heard bool, err error) {
	api := domainAPI(domain)
	heard = true
	for _, name := range append(b.cfg.Streams(), jsx.ObjStream(b.cfg.BlobBucket())) {
		s, err := b.js.Stream(ctx, name)
		if err != nil {
			return 0, false, fmt.Errorf("stream: %s: %w", name, err)
		}
		found := false
		for _, src := range s.CachedInfo().Sources {
			if src == nil || src.External == nil || src.External.APIPrefix != api {
				continue
			}
			found = true
			lag += src.Lag
			heard = heard && src.Active >= 0 && src.Active < heardWithin
		}
		heard = heard && found
	}
	return lag, heard, nil
}

// heardWithin is how recently a running source has heard from the other
// side (its heartbeats come each second).
const heardWithin = 3 * time.Second

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
// names a source in it; upkeep.DomainOf reads the domain back.
func domainAPI(domain string) string { return "$JS." + domain + ".API" }

// sourcesOf matches a stream's sources in domain.
func sourcesOf(domain string) func(*jetstream.StreamSource) bool {
	api := domainAPI(domain)
	return func(src *jetstream.StreamSource) bool { return src.External != nil && src.External.APIPrefix == api }
}
