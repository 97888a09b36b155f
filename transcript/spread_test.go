package transcript_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/transcript"
)

// TestSpreadDecodesAsOneByOne: a file decoded on every core
// (WithRunner) gives the entries, issues and errors it gives decoded a
// line after another — the real transcripts, and the same with lines
// that fail a check only the later pass makes (a number no float64
// holds), that are not JSON, or that are cut short.
func TestSpreadDecodesAsOneByOne(t *testing.T) {
	files, _ := filepath.Glob("testdata/*/*.jsonl")
	if len(files) < 5 {
		t.Fatalf("found %d transcripts", len(files))
	}
	run := func(n int, part func(lo, hi int)) { // small ranges: many boundaries
		parallel.Ranges(1)(n, part)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		format, err := transcript.Detect(data)
		if err != nil || format == transcript.FormatPi {
			continue
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		mid := len(lines) / 2
		damaged := bytes.Join([][]byte{
			bytes.Join(lines[:mid], nil),
			[]byte(`{"type":"odd","uuid":"u-huge","parentUuid":null,"sessionId":"s","timestamp":"2025-01-01T00:00:00Z","n":1e400}` + "\n"),
			[]byte("not json\n"),
			bytes.Join(lines[mid:], nil),
			[]byte(`{"type":"user","message":{"role":"us`),
		}, nil)
		for name, d := range map[string][]byte{"as is": data, "damaged": damaged} {
			for _, mode := range []codec.Mode{codec.Lenient, codec.Strict} {
				src := transcript.SourceFor(format, f)
				want, werr := transcript.Decode(format, d, src, mode)
				got, gerr := transcript.Decode(format, d, src, mode, transcript.WithRunner(run))
				what := fmt.Sprintf("%s (%s, mode %v)", f, name, mode)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) {
					t.Fatalf("%s: error %v, one by one %v", what, gerr, werr)
				}
				if werr != nil {
					continue
				}
				if fmt.Sprint(want.Issues) != fmt.Sprint(got.Issues) || len(want.Entries) != len(got.Entries) {
					t.Fatalf("%s: %d entries and issues %v, one by one %d and %v", what, len(got.Entries), got.Issues, len(want.Entries), want.Issues)
				}
				for i := range want.Entries {
					wj, _ := codec.EncodeEntry(want.Entries[i])
					gj, _ := codec.EncodeEntry(got.Entries[i])
					if !bytes.Equal(wj, gj) {
						t.Fatalf("%s: entry %d\n%s\none by one\n%s", what, i, gj, wj)
					}
				}
			}
		}
	}
}
