package codec_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

// Every line pi wrote decodes and encodes back to the same bytes, through
// JSON and through msgpack.
func TestPiSamplesRoundTripExactly(t *testing.T) {
	for _, s := range sessiontest.PiSamples(t) {
		lines := bytes.Split(bytes.TrimRight(s.Data, "\n"), []byte("\n"))
		h, err := codec.DecodeHeader(lines[0])
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := codec.EncodeHeader(h); !bytes.Equal(got, lines[0]) {
			t.Errorf("%s header:\n got %s\nwant %s", s.Name, got, lines[0])
		}
		for i, l := range lines[1:] {
			e, err := codec.DecodeEntry(l)
			if err != nil {
				t.Fatalf("%s:%d: %v", s.Name, i+2, err)
			}
			got, err := codec.EncodeEntry(e)
			if err != nil {
				t.Fatalf("%s:%d: %v", s.Name, i+2, err)
			}
			if !bytes.Equal(got, l) {
				t.Errorf("%s:%d:\n got %s\nwant %s", s.Name, i+2, got, l)
			}
			mp, err := codec.EncodeEntryMsgpack(e)
			if err != nil {
				t.Fatalf("%s:%d: msgpack: %v", s.Name, i+2, err)
			}
			back, err := codec.DecodeEntryMsgpack(mp)
			if err != nil {
				t.Fatalf("%s:%d: msgpack decode: %v", s.Name, i+2, err)
			}
			if got, _ := codec.EncodeEntry(back); !bytes.Equal(got, l) {
				t.Errorf("%s:%d: via msgpack:\n got %s\nwant %s", s.Name, i+2, got, l)
			}
		}
	}
}

// Lines come back byte for byte, through JSON and through msgpack:
// members unknown to the codec, of types it does not know, in any order.
func TestRoundTripPreservesWhatItDoesNotKnow(t *testing.T) {
	tests := []struct {
		name string
		line string
	}{
		{"unknown type and fields", `{"type":"agent_handoff","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","to":"reviewer","payload":{"x":[1,2.5,"y",null,true]}}`},
		{"unknown message fields", `{"type":"message","id":"a1","parentId":"p","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"hi","citations":[1]}],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"reasoning":7,"cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.3,"currency":"USD"}},"stopReason":"stop","serviceTier":"flex","timestamp":5}}`},
		{"explicit zero optional fields", `{"type":"compaction","id":"c","parentId":"p","timestamp":"t","summary":"","firstKeptEntryId":"","tokensBefore":0,"fromHook":false}`},
		{"explicit empty signature and redacted false", `{"type":"message","id":"m","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[{"type":"thinking","thinking":"","thinkingSignature":"","redacted":false}],"api":"","provider":"","model":"","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"","timestamp":0}}`},
		{"wrong kinds kept verbatim", `{"type":"thinking_level_change","id":"x","parentId":"p","timestamp":"t","thinkingLevel":3}`},
		{"content element that is not an object", `{"type":"message","id":"x","parentId":"p","timestamp":"t","message":{"role":"user","content":["plain",{"type":"text","text":"b"}],"timestamp":1}}`},
		{"label cleared", `{"type":"label","id":"l","parentId":"p","timestamp":"t","targetId":"x"}`},
		{"label empty string", `{"type":"label","id":"l","parentId":"p","timestamp":"t","targetId":"x","label":""}`},
		{"leaf before first entry", `{"type":"leaf","id":"l","parentId":null,"timestamp":"t"}`},
		{"active tools", `{"type":"active_tools_change","id":"l","parentId":"p","timestamp":"t","activeTools":["read","bash"]}`},
		{"retained tail and usage", `{"type":"compaction","id":"c","parentId":"p","timestamp":"t","summary":"s","firstKeptEntryId":"k","tokensBefore":10,"retainedTail":[{"role":"user","content":"keep","timestamp":1}],"usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":1e-7}}}`},
		// Members in another order than the encoder's come back in theirs
		// (pi 1.6 adds responseId and durationMs after a timestamp).
		{"pi 1.6 assistant message", `{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"anthropic-messages","provider":"anthropic","model":"claude","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":3,"cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.3,"totalFromProvider":true}},"stopReason":"stop","timestamp":1767225600000,"responseId":"msg_1","durationMs":1234}}`},
		{"usage entry", `{"type":"usage","id":"u","parentId":"b","timestamp":"2026-01-01T00:00:00.000Z","kind":"cache_warm","provider":"anthropic","model":"claude","usage":{"input":1,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":1,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"note":"warm"}`},
		{"context_edit replacing", `{"type":"context_edit","id":"e","parentId":"u","timestamp":"2026-01-01T00:00:00.000Z","targetId":"b","replacement":{"content":[{"type":"text","text":"edited"}]}}`},
		{"context_edit removing", `{"type":"context_edit","id":"e","parentId":"u","timestamp":"2026-01-01T00:00:00.000Z","targetId":"b","replacement":null}`},
		{"compaction with system message", `{"type":"compaction","id":"c","parentId":"e","timestamp":"2026-01-01T00:00:00.000Z","summary":"s","firstKeptEntryId":"b","tokensBefore":10,"details":{"x":1},"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"fromHook":false,"systemMessage":{"role":"system","content":"be brief","sections":{"a":"b"},"timestamp":1767225600000}}`},
		{"unknown type", `{"type":"some_future_type","id":"f","parentId":"c","timestamp":"2026-01-01T00:00:00.000Z","provider":7,"usage":"x","zeta":[1,2],"alpha":{"b":1,"a":2}}`},
		{"unknown type, envelope last", `{"payload":{"k":"v"},"provider":"p","type":"later_type","timestamp":"2026-01-01T00:00:00.000Z","parentId":null,"id":"g"}`},
		{"known type, members reordered", `{"timestamp":"2026-01-01T00:00:00.000Z","id":"h","type":"label","label":"x","parentId":"g","targetId":"g"}`},
		{"blocks reordered", `{"type":"message","id":"i","parentId":"h","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"name":"bash","type":"toolCall","arguments":{},"id":"t1","namespace":"ns"}],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1}}`},
		{"escapes", `{"type":"session_info","id":"s","parentId":"p","timestamp":"t","name":"tab\tnl\nquote\"back\\ctl\u0001 <&>   é 😀"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := codec.DecodeEntry([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			got, err := codec.EncodeEntry(e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, []byte(tt.line)) {
				t.Errorf("JSON round trip:\n got %s\nwant %s", got, tt.line)
			}
			mp, err := codec.EncodeEntryMsgpack(e)
			if err != nil {
				t.Fatal(err)
			}
			back, err := codec.DecodeEntryMsgpack(mp)
			if err != nil {
				t.Fatal(err)
			}
			got2, err := codec.EncodeEntry(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got2, []byte(tt.line)) {
				t.Errorf("msgpack round trip:\n got %s\nwant %s", got2, tt.line)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		wantMsg string
	}{
		{"not JSON", `{"type":`, "codec: malformed input"},
		{"not an object", `[1,2]`, "not an object"},
		{"no type", `{"id":"a","parentId":null}`, "no type"},
		{"no id", `{"type":"message","parentId":null}`, "no id"},
		{"no parentId", `{"type":"message","id":"a"}`, "no parentId"},
		{"numeric id", `{"type":"message","id":5,"parentId":null}`, `"id" is a number`},
		{"object parent", `{"type":"message","id":"a","parentId":{}}`, `"parentId" is an object`},
		{"own parent", `{"type":"message","id":"a","parentId":"a"}`, "its own parent"},
		{"header as entry", `{"type":"session","id":"a","parentId":null}`, "header"},
		{"trailing text", `{"type":"label","id":"a","parentId":null,"targetId":"b"} x`, "after the JSON value"},
		{"truncated", `{"type":"label","id":"a","parentId":null,"targetId":"b"`, "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := codec.DecodeEntry([]byte(tt.line))
			if !errors.Is(err, codec.ErrMalformed) {
				t.Fatalf("error = %v, want ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not say %q", err, tt.wantMsg)
			}
		})
	}
}

func TestEncodeRefusesWhatItCannotWrite(t *testing.T) {
	tests := []struct {
		name  string
		entry session.Entry
	}{
		{"bad raw", session.Entry{Type: session.TypeCustom, ID: "a", Body: &session.Custom{CustomType: "x", Data: session.Raw("{nope")}}},
		{"bad extra", session.Entry{Type: session.TypeCustom, ID: "a", Body: &session.Custom{CustomType: "x"}, Extra: []session.Field{{Key: "k", Value: session.Raw("")}}}},
		{"NaN cost", session.Entry{Type: session.TypeCompaction, ID: "a", Body: &session.Compaction{Usage: &session.Usage{Cost: session.Cost{Total: nan()}}}}},
		{"no id", session.Entry{Type: session.TypeLabel}},
		{"header type", session.Entry{Type: session.TypeSession, ID: "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := codec.EncodeEntry(&tt.entry); !errors.Is(err, codec.ErrInvalid) {
				t.Fatalf("error = %v, want ErrInvalid", err)
			}
		})
	}
}

func nan() float64 {
	z := 0.0
	return z / z
}

func TestNumbersAsJavaScriptPrintsThem(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-783, "-783"}, {0.1, "0.1"}, {0.098598, "0.098598"},
		{1e-6, "0.000001"}, {1e-7, "1e-7"}, {1.5e-10, "1.5e-10"}, {1e21, "1e+21"},
		{123456789012345680000, "123456789012345680000"}, {0.30000000000000004, "0.30000000000000004"},
	}
	for _, tt := range tests {
		e := session.Entry{Type: session.TypeCompaction, ID: "a", Body: &session.Compaction{Usage: &session.Usage{Cost: session.Cost{Total: tt.in}}}}
		b, err := codec.EncodeEntry(&e)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"total":`+tt.want+"}") {
			t.Errorf("%v encodes as %s, want total %s", tt.in, b, tt.want)
		}
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"sorted keys", `{"b":1,"a":{"d":[1,{"z":0,"y":1}],"c":2}}`, `{"a":{"c":2,"d":[1,{"y":1,"z":0}]},"b":1}`},
		{"UTF-16 order puts astral after BMP high", `{"😀":1,"～":2,"a":3}`, `{"a":3,"😀":1,"～":2}`},
		{"numbers normalised", `[1.0,1e2,-0.5e-7,10.50]`, `[1,100,-5e-8,10.5]`},
		{"escapes like JSON.stringify", `["\u003c\u0001\u2028\/"]`, "[\"<\\u0001\u2028/\"]"},
		{"whitespace dropped", " { \"a\" : [ true , null ] } ", `{"a":[true,null]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := codec.Canonical([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMsgpackIsNativeMsgpack(t *testing.T) {
	e := &session.Entry{Type: session.TypeLabel, ID: "l1", ParentID: "p", Timestamp: "t", Body: &session.Label{TargetID: "x", Label: "hi"},
		Extra: []session.Field{{Key: "n", Value: session.Raw("-5")}, {Key: "f", Value: session.Raw("2.5")}, {Key: "big", Value: session.Raw("18446744073709551615")}}}
	mp, err := codec.EncodeEntryMsgpack(e)
	if err != nil {
		t.Fatal(err)
	}
	// A fixmap of 9 members whose first key is "type".
	if mp[0] != 0x89 || !bytes.Contains(mp[:8], []byte("type")) {
		t.Fatalf("not a native msgpack map: % x", mp[:12])
	}
	j, err := codec.MsgpackToJSON(mp)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"label","id":"l1","parentId":"p","timestamp":"t","targetId":"x","label":"hi","n":-5,"f":2.5,"big":18446744073709551615}`
	if string(j) != want {
		t.Errorf("got %s\nwant %s", j, want)
	}
}

func TestMsgpackDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"truncated map", []byte{0x82, 0xa1, 'a'}},
		{"integer key", []byte{0x81, 0x01, 0x02}},
		{"trailing bytes", []byte{0xc0, 0xc0}},
		{"unknown ext", []byte{0xd4, 0x05, 0x00}},
		{"reserved code", []byte{0xc1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := codec.MsgpackToJSON(tt.in); !errors.Is(err, codec.ErrMalformed) {
				t.Fatalf("error = %v, want ErrMalformed", err)
			}
		})
	}
}
