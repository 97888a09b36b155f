package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/agentcore/sessionlog/cluster"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/system"
	"github.com/agentcore/sessionlog/stream"
)

// encryptionRounds alternates the two nodes, so that a slow spell of the
// machine falls on both.
const encryptionRounds = 4

// encryption compares appends, and a cold open of what they wrote, on a
// node encrypted at rest with the same on a plain node, fsync always.
func encryption(ctx context.Context, cfg Config, dir string, r *Report, p progress) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	plain, err := startNodeWith(ctx, dir+"/enc-off", func(c *cluster.Config) {})
	if err != nil {
		return err
	}
	defer plain.close()
	enc, err := startNodeWith(ctx, dir+"/enc-on", func(c *cluster.Config) {
		c.Encryption = &cluster.EncryptionConfig{Key: []byte(base64.StdEncoding.EncodeToString(key))}
	})
	if err != nil {
		return err
	}
	defer enc.close()
	msg, payload := message(cfg.PayloadBytes)
	type side struct {
		n      *node
		lat    latencies
		opened latencies
	}
	sides := []*side{{n: plain}, {n: enc}}
	per := max(1, cfg.Ops/encryptionRounds)
	for round := range encryptionRounds {
		for _, sd := range sides {
			p.say("encryption: round %d, %s", round+1, map[bool]string{true: "encrypted", false: "plain"}[sd.n == enc])
			b, err := sd.n.backend(ctx, nil)
			if err != nil {
				return err
			}
			id := fmt.Sprintf("enc-%d", round)
			st, err := b.CreateStore(ctx, header(id))
			if err != nil {
				return err
			}
			sess, err := session.New(st, system.Config())
			if err != nil {
				return err
			}
			for range per {
				t0 := time.Now()
				if _, err := sess.AppendMessage(ctx, msg); err != nil {
					return fmt.Errorf("bench: append: %w", err)
				}
				sd.lat = append(sd.lat, time.Since(t0))
			}
			st.Close(ctx)
			b.Close(ctx)
			// A new backend reads the session from the stream: the
			// node decrypts what it stored.
			same := b.Config()
			b2, err := sd.n.backend(ctx, func(c *stream.Config) { c.Stream, c.Prefix = same.Stream, same.Prefix })
			if err != nil {
				return err
			}
			t0 := time.Now()
			if err := openContext(ctx, b2, id, per, false); err != nil {
				return err
			}
			sd.opened = append(sd.opened, time.Since(t0))
			b2.Close(ctx)
		}
	}
	group := fmt.Sprintf("Encryption at rest (ChaCha20-Poly1305), %d B entries, fsync always", len(payload))
	base := "the same on an unencrypted node, same run"
	r.add(Row{Group: group, Name: "append latency p50", Ours: micros(sides[1].lat.pct(50)), Base: micros(sides[0].lat.pct(50)), Unit: "µs", BaseName: base})
	r.add(Row{Group: group, Name: "append latency p99", Ours: micros(sides[1].lat.pct(99)), Base: micros(sides[0].lat.pct(99)), Unit: "µs", BaseName: base})
	r.add(Row{Group: group, Name: fmt.Sprintf("open + context of %d entries (new backend), median", per), Ours: millis(sides[1].opened.pct(50)), Base: millis(sides[0].opened.pct(50)), Unit: "ms", BaseName: base})
	return nil
}
