package codec_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// pi16Lines are the entry lines pi 1.6.0 wrote in the suite's samples:
// most of their assistant messages put responseId and durationMs after
// the timestamp, so they keep a layout.
func pi16Lines(b *testing.B) [][]byte {
	var out [][]byte
	for _, s := range sessiontest.PiSamples(b) {
		if !bytes.HasPrefix([]byte(s.Name), []byte("pi1.6")) {
			continue
		}
		out = append(out, bytes.Split(bytes.TrimRight(s.Data, "\n"), []byte("\n"))[1:]...)
	}
	return out
}

func BenchmarkDecodeEntry(b *testing.B) {
	lines := pi16Lines(b)
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if _, err := codec.DecodeEntry(l); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkEncodeEntry encodes pi 1.6's entries as read (layouts kept:
// "as-read") and the same entries in the encoder's own order ("own-order",
// the baseline): what writing a layout back costs.
func BenchmarkEncodeEntry(b *testing.B) {
	lines := pi16Lines(b)
	var asRead, own []*session.Entry
	for _, l := range lines {
		e, err := codec.DecodeEntry(l)
		if err != nil {
			b.Fatal(err)
		}
		asRead = append(asRead, e)
		own = append(own, stripLayouts(e.Clone()))
	}
	for _, c := range []struct {
		name    string
		entries []*session.Entry
	}{{"as-read", asRead}, {"own-order", own}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				for _, e := range c.entries {
					var err error
					if buf, err = codec.AppendEntry(buf[:0], e); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func stripLayouts(e *session.Entry) *session.Entry {
	e.Layout = session.Layout{}
	strip := func(m *session.Message) {
		if m == nil {
			return
		}
		m.Layout = session.Layout{}
		for i := range m.Content.Blocks {
			m.Content.Blocks[i].Layout = session.Layout{}
		}
		if u := m.Usage(); u != nil {
			u.Layout, u.Cost.Layout = session.Layout{}, session.Layout{}
		}
	}
	strip(e.Message)
	if c := e.Compaction(); c != nil {
		strip(c.SystemMessage)
		if c.Usage != nil {
			c.Usage.Layout, c.Usage.Cost.Layout = session.Layout{}, session.Layout{}
		}
	}
	return e
}

// BenchmarkManyMembers decodes and encodes entries of 1,000 and 64,000
// unknown members: ns/member grows only by the cache misses of larger
// maps (2–3x), not with the number of members (60,000 took 7 s before
// the decoder's and encoder's sets, 0.1 s after).
func BenchmarkManyMembers(b *testing.B) {
	for _, n := range []int{1000, 64000} {
		line := []byte(manyMembers(n))
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				e, err := codec.DecodeEntryStrict(line)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := codec.EncodeEntry(e); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/member")
		})
	}
}

// BenchmarkEncodeEntryMsgpack encodes entries for the wire, as an append
// does: pi 1.6's entries, and a user message of 900 bytes of text (the
// append benchmarks' entry).
func BenchmarkEncodeEntryMsgpack(b *testing.B) {
	var pi []*session.Entry
	for _, l := range pi16Lines(b) {
		e, err := codec.DecodeEntry(l)
		if err != nil {
			b.Fatal(err)
		}
		pi = append(pi, e)
	}
	m := session.Message{Role: session.RoleUser, Content: session.TextContent(strings.Repeat("x", 900)), Timestamp: 1735689600000}
	text := []*session.Entry{{Type: session.TypeMessage, ID: "abcd1234", ParentID: "abcd1233", Timestamp: "2025-01-01T00:00:00.000Z", Message: &m}}
	for _, c := range []struct {
		name    string
		entries []*session.Entry
	}{{"pi", pi}, {"text-900", text}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, e := range c.entries {
					if _, err := codec.EncodeEntryMsgpack(e); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
