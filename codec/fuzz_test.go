package codec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

func addSamples(f *testing.F) {
	for _, s := range sessiontest.PiSamples(f) {
		lines := bytes.Split(s.Data, []byte("\n"))
		for _, l := range lines[:min(20, len(lines))] {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"type":"x","id":"a","parentId":null,"k":[1,{"a":"\u0000"}]}`))
}

// Decoding never panics; what decodes re-encodes to JSON that decodes to
// the same encoding (the codec is a fixed point after one trip).
func FuzzDecodeEntry(f *testing.F) {
	addSamples(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := codec.DecodeEntry(line)
		if err != nil {
			return
		}
		out, err := codec.EncodeEntry(e)
		if err != nil {
			return // e.g. NaN-free but invalid raw cannot come from a decode; tolerate ErrInvalid
		}
		if !json.Valid(out) {
			t.Fatalf("encoded invalid JSON: %s", out)
		}
		strict := jsontext.Value(line).IsValid() // no name twice, valid UTF-8
		if strict && !jsontext.Value(out).IsValid() {
			t.Fatalf("encoding wrote a name twice (or bad UTF-8): %s", out)
		}
		// What a writer completes (times, ids) never doubles a member kept
		// as read: the 1.5 message timestamp once did.
		if e.Message != nil && e.Message.Timestamp == 0 {
			c := e.Clone()
			c.Message.Timestamp = 1735956071992
			if filled, err := codec.EncodeEntry(c); err == nil && strict && !jsontext.Value(filled).IsValid() {
				t.Fatalf("completed entry has a name twice: %s", filled)
			}
		}
		e2, err := codec.DecodeEntry(out)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		out2, err := codec.EncodeEntry(e2)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n%s (%v)", out, out2, err)
		}
		mp, err := codec.EncodeEntryMsgpack(e2)
		if errors.Is(err, codec.ErrInvalid) {
			return // a number beyond a float64: the wire refuses it, as writes do
		}
		if err != nil {
			t.Fatalf("msgpack encode: %v", err)
		}
		e3, err := codec.DecodeEntryMsgpack(mp)
		if err != nil {
			t.Fatalf("msgpack decode: %v", err)
		}
		out3, err := codec.EncodeEntry(e3)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		_ = json.Unmarshal(out, &a)
		_ = json.Unmarshal(out3, &b)
		if !jsonEqual(a, b) {
			t.Fatalf("msgpack changed meaning:\n%s\n%s", out, out3)
		}
	})
}

func FuzzDecodeHeader(f *testing.F) {
	addSamples(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		h, err := codec.DecodeHeader(line)
		if err != nil {
			return
		}
		out, err := codec.EncodeHeader(h)
		if err != nil {
			t.Fatalf("encode decoded header: %v", err)
		}
		h2, err := codec.DecodeHeader(out)
		if err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
		if out2, _ := codec.EncodeHeader(h2); !bytes.Equal(out, out2) {
			t.Fatalf("not stable: %s / %s", out, out2)
		}
	})
}

// Any bytes either fail cleanly or become valid JSON.
func FuzzMsgpackToJSON(f *testing.F) {
	f.Add([]byte{0x81, 0xa1, 'a', 0x01})
	f.Add([]byte{0x92, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xc4, 0x01, 0xff})
	f.Add([]byte{0xd6, 0xff, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := codec.MsgpackToJSON(data)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON from % x: %s", data, out)
		}
		if _, err := codec.JSONToMsgpack(out); err != nil {
			t.Fatalf("JSON we produced does not go back: %s: %v", out, err)
		}
	})
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// The strict decoder never panics, accepts nothing the lenient one
// refuses, and what it accepts, re-encoded, is accepted again as the same
// entry.
func FuzzDecodeEntryStrict(f *testing.F) {
	addSamples(f)
	f.Add([]byte(`{"type":"message","message":{"role":"user","content":"hi","timestamp":1}}`))
	f.Add([]byte(`{"type":"message","message":{"role":5}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := codec.DecodeEntryStrict(line)
		if err != nil {
			return
		}
		if _, lerr := codec.DecodeLegacyEntry(line); lerr != nil {
			t.Fatalf("strict accepted what lenient refuses (%v): %s", lerr, line)
		}
		out, err := codec.EncodeEntry(e)
		if err != nil {
			return
		}
		e2, err := codec.DecodeEntryStrict(out)
		if err != nil {
			t.Fatalf("strict re-decode of %s: %v", out, err)
		}
		out2, err := codec.EncodeEntry(e2)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n%s (%v)", out, out2, err)
		}
	})
}

// The one-pass transcoder writes exactly what the token transcoder does
// (when it takes the value at all).
func FuzzMsgpackTranscoders(f *testing.F) {
	addSamples(f)
	for _, s := range []string{`-1`, `-33`, `-129`, `-32769`, `-2147483649`, `255`, `65536`, `4294967296`, `18446744073709551615`, `1e400`, `1.5`,
		`"` + strings.Repeat("y", 40) + `"`, `"` + strings.Repeat("z", 300) + `"`, `"` + strings.Repeat("w", 70000) + `"`, `"\ud800"`, `[` + strings.Repeat(`1,`, 20) + `1]`, `{}`, `[]`, `null`, `true`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := codec.JSONToMsgpackFast(data)
		slow, err := codec.JSONToMsgpackTokens(data)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("fast took %q, the token path refused it: %v", data, err)
		}
		if !bytes.Equal(fast, slow) {
			t.Fatalf("transcoders differ on %q:\n%x\n%x", data, fast, slow)
		}
	})
}

// Any bytes either fail to load with a reason, or load to a session that,
// written out and loaded again, is the same session.
func FuzzDecodeFile(f *testing.F) {
	for _, s := range sessiontest.PiSamples(f) {
		f.Add(s.Data[:min(len(s.Data), 4000)])
	}
	f.Add([]byte(sessiontest.HeaderLine + "\n" + sessiontest.UserLine("a", "") + "\n" + sessiontest.UserLine("b", "a") + "\n"))
	f.Add([]byte(sessiontest.HeaderLine + "\n" + sessiontest.UserLine("b", "c") + "\n" + sessiontest.UserLine("c", "b") + "\n"))
	f.Add([]byte(`{"type":"session","id":"old","cwd":"/"}` + "\n" + `{"type":"message","message":{"role":"user","content":"x"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ld, err := codec.DecodeFile(data, "fuzz", codec.Lenient)
		if err != nil {
			return
		}
		h := ld.Tree.Header()
		out, err := codec.EncodeFile(&h, sessiontest.Entries(t, ld.Tree))
		if err != nil {
			t.Fatalf("a loaded session does not encode: %v", err)
		}
		// Strings sharing the data's bytes decode to the same session.
		shared, err := codec.DecodeFile(bytes.Clone(data), "fuzz", codec.Lenient, codec.WithSharedData())
		if err != nil {
			t.Fatalf("decoded, but not with shared data: %v", err)
		}
		hs := shared.Tree.Header()
		if outShared, err := codec.EncodeFile(&hs, sessiontest.Entries(t, shared.Tree)); err != nil || !bytes.Equal(out, outShared) {
			t.Fatalf("shared data decodes otherwise (%v):\n%s\n---\n%s", err, out, outShared)
		}
		again, err := codec.DecodeFile(out, "again", codec.Strict)
		if err != nil {
			t.Fatalf("what we wrote does not load strictly: %v\n%s", err, out)
		}
		if again.Tree.Len() != ld.Tree.Len() {
			t.Fatalf("%d entries became %d", ld.Tree.Len(), again.Tree.Len())
		}
		h2 := again.Tree.Header()
		out2, _ := codec.EncodeFile(&h2, sessiontest.Entries(t, again.Tree))
		if !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n---\n%s", out, out2)
		}
		if len(ld.Issues) == 0 || ld.Torn && len(ld.Issues) == 1 {
			if _, err := codec.DecodeFile(data, "fuzz", codec.Strict); err != nil {
				t.Fatalf("lenient found no problem but strict refused: %v", err)
			}
		}
	})
}

// On a subject shared by a session's header and entries, the message's own
// type tells them apart: whatever the bytes, DecodeMsgpack gives exactly
// one of the two or an error, and agrees with the typed decoders.
func FuzzDecodeMsgpack(f *testing.F) {
	h, _ := codec.EncodeHeaderMsgpack(&session.Header{Version: 3, ID: "s1", Timestamp: "2025-01-01T00:00:00.000Z", Cwd: "/w"})
	e, _ := codec.EncodeEntryMsgpack(&session.Entry{Type: session.TypeModelChange, ID: "e1", Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.ModelChange{Provider: "p", ModelID: "m"}})
	f.Add(h)
	f.Add(e)
	f.Add([]byte{0x81, 0xa4, 't', 'y', 'p', 'e', 0xa7, 's', 'e', 's', 's', 'i', 'o', 'n'})
	f.Add([]byte{0x91, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		hd, en, err := codec.DecodeMsgpack(data)
		if err != nil {
			if hd != nil || en != nil {
				t.Fatalf("an error and a value from % x", data)
			}
			return
		}
		typ, terr := codec.MsgpackType(data)
		switch {
		case (hd == nil) == (en == nil):
			t.Fatalf("header %v and entry %v from % x", hd, en, data)
		case terr != nil:
			t.Fatalf("decoded, but its type cannot be peeked: %v", terr)
		case hd != nil && typ != string(session.TypeSession), en != nil && typ != string(en.Type):
			t.Fatalf("peeked type %q, decoded %v %v", typ, hd, en)
		case hd != nil:
			if _, err := codec.DecodeHeaderMsgpack(data); err != nil {
				t.Fatalf("a header the header decoder refuses: %v", err)
			}
		default:
			if en.Type == session.TypeSession {
				t.Fatalf("an entry of type session from % x", data)
			}
			if _, err := codec.DecodeEntryMsgpack(data); err != nil {
				t.Fatalf("an entry the entry decoder refuses: %v", err)
			}
		}
	})
}

func TestDecodeMsgpackTellsHeaderFromEntry(t *testing.T) {
	hd := &session.Header{Version: 3, ID: "s1", Timestamp: "2025-01-01T00:00:00.000Z", Cwd: "/w"}
	en := &session.Entry{Type: session.TypeLabel, ID: "e1", ParentID: "e0", Timestamp: "2025-01-01T00:00:00.000Z", Body: &session.Label{TargetID: "e0", Label: "x"}}
	hb, _ := codec.EncodeHeaderMsgpack(hd)
	eb, _ := codec.EncodeEntryMsgpack(en)
	if h, e, err := codec.DecodeMsgpack(hb); err != nil || e != nil || h == nil || h.ID != "s1" {
		t.Fatalf("header: %v %v %v", h, e, err)
	}
	if h, e, err := codec.DecodeMsgpack(eb); err != nil || h != nil || e == nil || e.ID != "e1" || e.Label().Label != "x" {
		t.Fatalf("entry: %v %v %v", h, e, err)
	}
	if _, _, err := codec.DecodeMsgpack([]byte{0xc1}); err == nil {
		t.Fatal("undecodable bytes decoded")
	}
}
