package transcript_test

import (
	"bytes"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

// Whatever a file holds, a decode gives entries a tree takes, the same
// whether made directly or via JSON (pi_direct.go), and a file decoded
// strictly is given back line for line (blank lines aside).
func FuzzDecode(f *testing.F) {
	for _, fx := range fixtures(f) {
		// Short lines of each file: the engine mutates small inputs best.
		var seed []byte
		for _, l := range bytes.SplitAfter(fx.data, []byte("\n")) {
			if len(l) < 1500 && len(seed) < 6000 {
				seed = append(seed, l...)
			}
		}
		f.Add(seed, fx.format == transcript.FormatCodex)
	}
	f.Add([]byte(good+"\n"+good2+"\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, codex bool) {
		format := transcript.FormatClaudeCode
		if codex {
			format = transcript.FormatCodex
		}
		if err := sameEntries(format, data); err != nil {
			t.Fatal(err)
		}
		src := transcript.Source{ID: "fuzz", File: "f.jsonl"}
		for _, mode := range []codec.Mode{codec.Strict, codec.Lenient} {
			d, err := transcript.Decode(format, data, src, mode)
			if err != nil {
				continue
			}
			tree := session.NewTree(d.Header)
			for _, e := range d.Entries {
				if err := tree.Apply(e); err != nil {
					t.Fatalf("%s: entry %s: %v", mode, e.ID, err)
				}
			}
			if mode != codec.Strict || len(d.Issues) > 0 {
				continue
			}
			out, _, err := transcript.Export(format, d.Entries)
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			for _, l := range bytes.Split(data, []byte("\n")) {
				l = bytes.TrimSuffix(l, []byte("\r"))
				if len(bytes.TrimSpace(l)) > 0 {
					want = append(append(want, l...), '\n')
				}
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("export:\n%q\nwant\n%q", out, want)
			}
		}
	})
}
