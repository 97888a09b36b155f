package transcript_test

import (
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/parallel"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/transcript"
)

// TestDirectEntriesAreDecodedOnes: the entries made directly are the ones
// writing them as JSON and decoding it made, on every file of testdata
// and on files of every shape a message takes (blocks of each kind,
// arguments in another form than the encoder's, strings the encoder
// escapes; in odd.lines, a line not UTF-8 and blocks the write check
// refuses), read a line at a time and spread.
func TestDirectEntriesAreDecodedOnes(t *testing.T) {
	files := fixtures(t)
	for _, p := range []string{"testdata/direct/shapes.lines", "testdata/direct/odd.lines"} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fixture{p, transcript.FormatClaudeCode, data})
	}
	// Every shape is made in strict mode too: no line of shapes.lines is
	// refused, so its entries are all compared in both modes.
	if _, err := transcript.Decode(transcript.FormatClaudeCode, files[len(files)-2].data, transcript.Source{ID: "s", File: "shapes.lines"}, codec.Strict); err != nil {
		t.Fatal(err)
	}
	for _, fx := range files {
		for _, spread := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/spread=%v", fx.path, spread), func(t *testing.T) {
				var opts []transcript.Option
				if spread {
					opts = append(opts, transcript.WithRunner(parallel.Lines))
				}
				if err := sameEntries(fx.format, fx.data, opts...); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// sameEntries decodes data directly and via JSON, in both modes, and says
// where they differ.
func sameEntries(f transcript.Format, data []byte, opts ...transcript.Option) error {
	src := transcript.Source{ID: "same", File: "f.jsonl"}
	for _, mode := range []codec.Mode{codec.Strict, codec.Lenient} {
		direct, derr := transcript.Decode(f, data, src, mode, opts...)
		via, verr := transcript.Decode(f, data, src, mode, append(opts, transcript.ViaJSON())...)
		if (derr == nil) != (verr == nil) {
			return fmt.Errorf("%s: made directly: %v; via JSON: %v", mode, derr, verr)
		}
		if derr != nil {
			continue
		}
		if len(direct.Entries) != len(via.Entries) {
			return fmt.Errorf("%s: %d entries made directly, %d via JSON", mode, len(direct.Entries), len(via.Entries))
		}
		for i := range direct.Entries {
			if !reflect.DeepEqual(direct.Entries[i], via.Entries[i]) {
				return fmt.Errorf("%s: entry %d differs:\n%s\nvia JSON:\n%s", mode, i, encoded(direct.Entries[i]), encoded(via.Entries[i]))
			}
		}
		if !reflect.DeepEqual(direct.Issues, via.Issues) {
			return fmt.Errorf("%s: issues %v, via JSON %v", mode, direct.Issues, via.Issues)
		}
	}
	return nil
}

func encoded(e *session.Entry) string {
	b, err := codec.EncodeEntry(e)
	if err != nil {
		return fmt.Sprintf("%#v (%v)", e, err)
	}
	return string(b)
}
