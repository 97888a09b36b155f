package codec_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/codec"
)

// numberLiterals are written forms JSON allows that a float64 or an int64
// would not give back: every one must survive every path as written.
var numberLiterals = []string{
	"1.0", "15.0", "0.10", "1e3", "1E3", "1e+3", "-0", "-0.0", "0.0", "2.50",
	"123456789012345678901234567890", "-98765432109876543210", "9007199254740993",
	"1.0000000000000001", "5e-324", "1.7976931348623157e308", "100.000",
	// and forms that already round-tripped: they must stay as they are
	"0", "1", "-783", "0.1", "1e-7", "1.5e-10", "1e+21", "18446744073709551615", "-9223372036854775808",
}

// numbers lists the number tokens of a JSON text, in order.
func numbers(t testing.TB, j []byte) []string {
	t.Helper()
	d := jsontext.NewDecoder(bytes.NewReader(j))
	var out []string
	for {
		if d.PeekKind() == '0' {
			v, err := d.ReadValue()
			if err != nil {
				t.Fatalf("%s: %v", j, err)
			}
			out = append(out, string(v))
			continue
		}
		if _, err := d.ReadToken(); err != nil {
			return out
		}
	}
}

// An entry's numbers keep their written form wherever they stand — a
// custom entry's data, an unknown member, a cost, a usage count, a
// message's timestamp — through the JSON codec and the wire's msgpack.
func TestNumbersKeepTheirLiterals(t *testing.T) {
	for _, lit := range numberLiterals {
		intLike := !strings.ContainsAny(lit, ".eE") || lit == "1e3" || lit == "1E3" || lit == "1e+3"
		lines := map[string]string{
			"custom data":    `{"type":"custom","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"codex/event_msg","data":{"rate":{"used_percent":` + lit + `,"list":[` + lit + `,{"x":` + lit + `}]}}}`,
			"unknown member": `{"type":"label","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","targetId":"b","label":"x","weight":` + lit + `}`,
			"cost":           `{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":` + lit + `,"output":0,"cacheRead":0,"cacheWrite":0,"total":` + lit + `}},"stopReason":"stop","timestamp":1}}`,
		}
		if intLike && !strings.HasPrefix(lit, "-") || lit == "-0" {
			lines["usage count"] = `{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":` + lit + `,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}}`
		}
		for where, line := range lines {
			e, err := codec.DecodeEntry([]byte(line))
			if err != nil {
				t.Fatalf("%s %s: decode: %v", where, lit, err)
			}
			j, err := codec.EncodeEntry(e)
			if err != nil {
				t.Fatalf("%s %s: encode: %v", where, lit, err)
			}
			if string(j) != line {
				t.Errorf("%s %s: JSON round trip\n got %s\nwant %s", where, lit, j, line)
			}
			mp, err := codec.EncodeEntryMsgpack(e)
			if err != nil {
				t.Fatalf("%s %s: msgpack: %v", where, lit, err)
			}
			back, err := codec.DecodeEntryMsgpack(mp)
			if err != nil {
				t.Fatalf("%s %s: msgpack decode: %v", where, lit, err)
			}
			j2, err := codec.EncodeEntry(back)
			if err != nil {
				t.Fatal(err)
			}
			if string(j2) != line {
				t.Errorf("%s %s: through msgpack\n got %s\nwant %s", where, lit, j2, line)
			}
		}
	}
}

// A value's number tokens come back from msgpack as they went in, and
// the two transcoders agree, whatever the value.
func FuzzMsgpackKeepsNumbers(f *testing.F) {
	for _, lit := range numberLiterals {
		f.Add([]byte(`{"a":[` + lit + `,{"b":` + lit + `}]}`))
	}
	f.Add([]byte(`1e400`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !jsontext.Value(data).IsValid() {
			return
		}
		mp, err := codec.JSONToMsgpack(data)
		if err != nil {
			return // refused with a reason: 1e400, invalid UTF-8
		}
		back, err := codec.MsgpackToJSON(mp)
		if err != nil {
			t.Fatalf("%q: msgpack of it does not read back: %v", data, err)
		}
		if in, out := numbers(t, data), numbers(t, back); strings.Join(in, " ") != strings.Join(out, " ") {
			t.Fatalf("numbers of %q came back as %v, want %v", data, out, in)
		}
	})
}

// The number extension is checked like every msgpack value: a literal
// that is not a JSON number, or a length past the input, is refused.
func TestMsgpackNumberExtensionRefusesBadLiterals(t *testing.T) {
	for name, mp := range map[string][]byte{
		"not a number":  {0xd5, 0x01, 'a', 'b'},
		"two numbers":   {0xd6, 0x01, '1', ',', '2', ' '},
		"past the end":  {0xc7, 0x20, 0x01, '1'},
		"empty":         {0xc7, 0x00, 0x01},
		"a JSON string": {0xd6, 0x01, '"', 'a', 'b', '"'},
	} {
		if j, err := codec.MsgpackToJSON(mp); err == nil {
			t.Errorf("%s: read as %s, want an error", name, j)
		}
	}
}
