package transcript_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/transcript"
)

// BenchmarkDecodeClaudeCode decodes a real 3.2 MB transcript; json-valid
// is the least any reader of its lines does, the baseline.
func BenchmarkDecodeClaudeCode(b *testing.B) {
	const path = "testdata/claude-code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	src := transcript.SourceFor(transcript.FormatClaudeCode, path)
	for _, c := range []struct {
		name string
		opts []transcript.Option
	}{{"decode", []transcript.Option{transcript.WithRunner(parallel.Lines)}}, {"decode-one-core", nil}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := transcript.Decode(transcript.FormatClaudeCode, data, src, codec.Strict, c.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("json-valid", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			for _, l := range bytes.Split(data, []byte("\n")) {
				if len(l) > 0 && !json.Valid(l) {
					b.Fatal("not JSON")
				}
			}
		}
	})
}
