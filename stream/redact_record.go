package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/agentcore/sessionlog/codec"
)

// metaRedact records the deployment's redaction in its streams' metadata
// (codec.RedactConfig as JSON), so that every writer applies it, not only
// the node that serves the deployment: the CLI through a user's
// credentials, a program on the library, an edge's own verbs. An edge
// started with -redact stored raw keys written by its command line
// (issue 68, item 2).
const metaRedact = "sessionlog.redact"

// settleRedaction records the backend's rules as the deployment's
// (Config.RecordRedaction), or joins the recorded ones to its own.
func (b *Backend) settleRedaction(ctx context.Context) error {
	md := b.parts[0].stream.CachedInfo().Config.Metadata
	if b.cfg.RecordRedaction {
		return b.recordRedaction(ctx)
	}
	v := md[metaRedact]
	if v == "" {
		return nil
	}
	var rec codec.RedactConfig
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		return fmt.Errorf("%w: the redaction recorded in stream %s cannot be read: %v", ErrInvalidConfig, b.parts[0].cfg.Stream, err)
	}
	if _, err := rec.Redactor(); err != nil {
		return fmt.Errorf("%w: the redaction recorded in stream %s: %v", ErrInvalidConfig, b.parts[0].cfg.Stream, err)
	}
	joined := rec
	if b.cfg.Redact != nil {
		joined = b.cfg.Redact.With(rec)
	}
	b.cfg.Redact = &joined
	for _, p := range b.parts {
		p.cfg.Redact = &joined
	}
	return nil
}

// recordRedaction writes the backend's rules into every partition's
// stream (removes them for none).
func (b *Backend) recordRedaction(ctx context.Context) error {
	want := ""
	if r := b.cfg.Redact; r != nil && (r.Defaults || len(r.Rules) > 0) {
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		want = string(v)
	}
	for _, p := range b.parts {
		cfg := p.stream.CachedInfo().Config
		if cfg.Metadata[metaRedact] == want {
			continue
		}
		md := maps.Clone(cfg.Metadata)
		if md == nil {
			md = map[string]string{}
		}
		if want == "" {
			delete(md, metaRedact)
		} else {
			md[metaRedact] = want
		}
		cfg.Metadata = md
		if err := p.updateStream(ctx, cfg); err != nil {
			return fmt.Errorf("stream: record the redaction in %s: %w", cfg.Name, err)
		}
	}
	return nil
}
