package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/follow"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/transcript"
)

// Other agents' transcripts: importing a real 3 MB Claude Code
// transcript against reading its lines with json.Valid (the least any
// reader of the file does), and how far a follow runs behind a file
// appended to at a steady pace.

// transcriptsPart measures on node n.
func transcriptsPart(ctx context.Context, cfg Config, n *node, r *Report, p progress) error {
	data, err := os.ReadFile(cfg.TranscriptFile)
	if err != nil {
		return fmt.Errorf("bench: transcripts: %w (run from the repository's root, or set -transcript)", err)
	}
	group := fmt.Sprintf("Claude Code transcript, %.1f MB, %d lines", float64(len(data))/1e6, bytes.Count(data, []byte("\n")))
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	src := transcript.SourceFor(transcript.FormatClaudeCode, cfg.TranscriptFile)
	var decoded *transcript.Decoded
	// The two in turns, the best of nine each: a run's noise (tens of
	// percent from one to the next here) falls on both alike.
	d, err := bestOf(9, func() error {
		for _, l := range lines {
			if !json.Valid(l) {
				return fmt.Errorf("bench: a line that is not JSON")
			}
		}
		return nil
	}, func() (err error) {
		decoded, err = transcript.Decode(transcript.FormatClaudeCode, data, src, codec.Strict, transcript.WithRunner(parallel.Lines))
		return err
	})
	if err != nil {
		return err
	}
	valid, decode := d[0], d[1]
	b, err := n.backend(ctx, nil)
	if err != nil {
		return err
	}
	defer b.Close(ctx)
	p.say("transcripts: importing %s three times", filepath.Base(cfg.TranscriptFile))
	k := 0
	imp, err := best(3, func() error {
		k++
		d, err := transcript.Decode(transcript.FormatClaudeCode, data, src, codec.Strict, transcript.WithRunner(parallel.Lines))
		if err != nil {
			return err
		}
		t := session.NewTree(d.Header)
		for _, e := range d.Entries {
			if err := t.Apply(e); err != nil {
				return err
			}
		}
		h := d.Header
		h.ID = fmt.Sprintf("%s-%d", h.ID, k)
		return lifecycle.Import(ctx, b, h, t)
	})
	if err != nil {
		return err
	}
	// The floor under an import: reading the lines (json.Valid) and
	// publishing the entries as stored (msgpack) in atomic batches of the
	// same size, raw — no checks, no tree, no sequence check.
	store, err := rawImport(ctx, b, decoded.Entries)
	if err != nil {
		return err
	}
	base := "json.Valid of each line"
	r.add(Row{Group: group, Name: "decode into entries", Ours: millis(decode), Base: millis(valid), Unit: "ms", BaseName: base})
	r.add(Row{Group: group, Name: fmt.Sprintf("import into the store (%d entries), fsync %s", len(decoded.Entries), n.sync), Ours: millis(imp), Base: millis(valid), Unit: "ms", BaseName: base})
	r.add(Row{Group: group, Name: "the same import", Ours: millis(imp), Base: millis(valid + store), Unit: "ms",
		BaseName: fmt.Sprintf("json.Valid + publishing the stored entries raw in atomic batches of %d (%.1f ms)", stream.MaxBatch, millis(store))})

	lag, interval, err := followLag(ctx, cfg, b, lines, p)
	if err != nil {
		return err
	}
	for _, q := range []int{50, 99} {
		r.add(Row{Group: group, Name: fmt.Sprintf("follow lag p%d, %d lines at %d a second", q, len(lag), followRate), Ours: millis(lag.pct(q)), Base: millis(interval), Unit: "ms",
			BaseName: "the poll interval"})
	}
	return nil
}

// followRate is how many lines a second the file grows by while followed.
const followRate = 50

// followLag appends the transcript's lines to a file at followRate lines a
// second while a follow runs, and times each line from its write to its
// entry's append returning.
func followLag(ctx context.Context, cfg Config, repo session.Repo, lines [][]byte, p progress) (latencies, time.Duration, error) {
	n := min(len(lines), max(50, cfg.Ops/4))
	p.say("transcripts: follow lag, %d lines at %d a second", n, followRate)
	dir, err := os.MkdirTemp("", "sessionlog-follow-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "0e0e0e0e-2222-4333-8444-555566667777.jsonl")
	w, err := os.Create(path)
	if err != nil {
		return nil, 0, err
	}
	defer w.Close()

	rec := &stampedRepo{Repo: repo, stored: map[string]time.Time{}}
	fc := follow.DefaultConfig()
	fc.Dirs = []string{dir}
	f, err := follow.New(fc, rec)
	if err != nil {
		return nil, 0, err
	}
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(fctx) }()

	// Each line's entry id, to find when it was stored.
	dec, _ := transcript.NewLineDecoder(transcript.FormatClaudeCode)
	written := map[string]time.Time{}
	tick := time.NewTicker(time.Second / followRate)
	for i := range n {
		<-tick.C
		entries, err := dec.Line(i+1, lines[i])
		if err != nil {
			stop()
			return nil, 0, err
		}
		if _, err := w.Write(append(lines[i], '\n')); err != nil {
			stop()
			return nil, 0, err
		}
		now := time.Now()
		for _, e := range entries {
			written[e.ID] = now
		}
	}
	tick.Stop()
	// The last lines: stored within a few polls.
	deadline := time.Now().Add(10 * time.Second)
	for rec.count() < len(written) && time.Now().Before(deadline) {
		time.Sleep(fc.Interval / 4)
	}
	stop()
	if err := <-done; err != nil {
		return nil, 0, err
	}
	var lag latencies
	for id, at := range written {
		if st, ok := rec.at(id); ok {
			lag = append(lag, st.Sub(at))
		}
	}
	if len(lag) < len(written) {
		return nil, 0, fmt.Errorf("bench: the follow stored %d of %d entries", len(lag), len(written))
	}
	return lag, fc.Interval, nil
}

// stampedRepo notes when each entry's append returned.
type stampedRepo struct {
	session.Repo
	mu     sync.Mutex
	stored map[string]time.Time
}

func (s *stampedRepo) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.stored)
}

func (s *stampedRepo) at(id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.stored[id]
	return t, ok
}

func (s *stampedRepo) Create(ctx context.Context, h session.Header) (session.Store, error) {
	st, err := s.Repo.Create(ctx, h)
	return s.wrap(st), err
}

func (s *stampedRepo) Open(ctx context.Context, id string) (session.Store, error) {
	st, err := s.Repo.Open(ctx, id)
	return s.wrap(st), err
}

func (s *stampedRepo) wrap(st session.Store) session.Store {
	if st == nil {
		return nil
	}
	return &stampedStore{Store: st, repo: s}
}

type stampedStore struct {
	session.Store
	repo *stampedRepo
}

func (s *stampedStore) Append(ctx context.Context, e *session.Entry) error {
	return s.AppendBatch(ctx, []*session.Entry{e})
}

// AppendBatch stamps each entry as its batch's append returns.
func (s *stampedStore) AppendBatch(ctx context.Context, entries []*session.Entry) error {
	if err := session.AppendAll(ctx, s.Store, entries); err != nil {
		return err
	}
	now := time.Now()
	s.repo.mu.Lock()
	for _, e := range entries {
		s.repo.stored[e.ID] = now
	}
	s.repo.mu.Unlock()
	return nil
}

func (s *stampedStore) MaxBatch() int {
	if l, ok := s.Store.(session.BatchLimiter); ok {
		return l.MaxBatch()
	}
	return 0
}

func (s *stampedStore) Has(ctx context.Context, id string) (bool, error) {
	if c, ok := s.Store.(session.IDChecker); ok {
		return c.Has(ctx, id)
	}
	return false, nil
}

// rawImport times publishing entries as the store keeps them (msgpack),
// in atomic batches of stream.MaxBatch, to a subject of their own, raw:
// the best of three.
func rawImport(ctx context.Context, b *stream.Backend, entries []*session.Entry) (time.Duration, error) {
	var msgs []*nats.Msg
	k := 0
	return best(3, func() error {
		k++
		subject := rawSubject(b, fmt.Sprintf("import-floor-%d", k))
		msgs = msgs[:0]
		for _, e := range entries {
			data, err := codec.EncodeEntryMsgpack(e)
			if err != nil {
				return err
			}
			msgs = append(msgs, &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}})
		}
		for batch := msgs; len(batch) > 0; {
			n := min(len(batch), stream.MaxBatch)
			if _, err := jetstreamext.PublishMsgBatch(ctx, b.JetStream(), batch[:n], jetstreamext.BatchFlowControl{AckFirst: false}); err != nil {
				return err
			}
			batch = batch[n:]
		}
		return nil
	})
}
