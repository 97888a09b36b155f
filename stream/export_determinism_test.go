package stream_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/lifecycle"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/transcript"
)

// An imported transcript exports to its own bytes whichever way the
// session is read back — the store that wrote it, a snapshot opened by
// another backend, the stream replayed — every time. The wire form once
// turned 1.0 into 1 while a snapshot, written from the writer's memory,
// kept 1.0; an import's snapshot (due at a compaction) was written or not
// before the importing process closed its store, so the same import
// exported differently from run to run. The imports here run side by
// side so that -race sees them.
func TestTranscriptsExportTheSameBytesEveryWay(t *testing.T) {
	fixtures := []string{
		"codex/numbers.jsonl",
		"codex/sample_codex_session.jsonl",
		"codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
		"claude-code/short.jsonl",
		"claude-code/tool_heavy.jsonl",
	}
	const rounds = 3
	ctx := context.Background()
	n := streams.Add(1)
	cfg := stream.DefaultConfig()
	cfg.Stream, cfg.Prefix = fmt.Sprintf("T%d", n), fmt.Sprintf("t%d", n)
	cfg.SnapshotEvery, cfg.SnapshotOnCompaction = 0, false // snapshots taken by the test, not by timing
	b, err := stream.New(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	other := newBackendOn(t, cfg) // a second node's view of the same stream
	defer other.Close(ctx)

	var wg sync.WaitGroup
	for _, name := range fixtures {
		data, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := transcript.Detect(data)
		if err != nil {
			t.Fatal(err)
		}
		for round := range rounds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("det-%s-%d", strings.TrimSuffix(filepath.Base(name), ".jsonl"), round)
				if err := exportEveryWay(ctx, b, other, f, data, name, id); err != nil {
					t.Errorf("%s, round %d: %v", name, round, err)
				}
			}()
		}
	}
	wg.Wait()
}

func exportEveryWay(ctx context.Context, b, other *stream.Backend, f transcript.Format, data []byte, name, id string) error {
	d, err := transcript.Decode(f, data, transcript.SourceFor(f, name), codec.Strict)
	if err != nil {
		return err
	}
	d.Header.ID = id
	tree := session.NewTree(d.Header)
	for _, e := range d.Entries {
		if err := tree.Apply(e); err != nil {
			return err
		}
	}
	if err := lifecycle.Import(ctx, b, d.Header, tree); err != nil {
		return err
	}
	same := func(way string, entries []*session.Entry) error {
		got, _, err := transcript.Export(f, entries)
		if err != nil {
			return fmt.Errorf("%s: %w", way, err)
		}
		if string(got) != string(data) {
			return fmt.Errorf("%s: the export differs from the file at byte %d", way, firstDiff(got, data))
		}
		return nil
	}
	st, err := b.OpenStore(ctx, id)
	if err != nil {
		return err
	}
	es, err := st.Entries(ctx)
	if err == nil {
		err = same("opened", es)
	}
	if err == nil {
		err = st.Snapshot(ctx)
	}
	st.Close(ctx)
	if err != nil {
		return err
	}
	snap, info, err := other.OpenStoreInfo(ctx, id)
	if err != nil {
		return err
	}
	defer snap.Close(ctx)
	if !info.FromSnapshot {
		return fmt.Errorf("the second backend did not open the snapshot: %+v", info)
	}
	if es, err = snap.Entries(ctx); err != nil {
		return err
	}
	if err := same("from the snapshot", es); err != nil {
		return err
	}
	if es, err = other.ReplayedEntries(ctx, id); err != nil {
		return err
	}
	return same("replayed from the stream", es)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
