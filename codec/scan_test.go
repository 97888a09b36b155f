package codec_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/codec"
)

// jsonParseOpts is what JSON.parse accepts beyond strict JSON.
var jsonParseOpts = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// The scanner accepts exactly the texts jsontext accepts (with JSON.parse's
// allowances), and decoding through it gives what decoding through
// jsontext's Decoder gives: the same entry, or an error of the same kind
// naming the same member.
func FuzzScannerMatchesJSONText(f *testing.F) {
	addSamples(f)
	for _, s := range scannerCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkScanner(t, line)
	})
}

// Texts at the edges of JSON's grammar, each checked against jsontext.
var scannerCases = []string{
	// Escapes in a member held until its object's kind is known.
	`{"message":{"content":[{"text":"a\\b \"q\" \u2028","type":"text"}],"role":"user","timestamp":1},"type":"message","id":"a","parentId":null,"timestamp":"t"}`,
	``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,"a":1}`, `{"a" 1}`, `{"a":}`,
	`{"a":1 "b":2}`, `{1:2}`, `{"a":1}}`, `{"a":1}x`, `[1] [2]`, `"\u00e9"`, `"\ud800"`, `"\x"`,
	`"\u12"`, "\"a\tb\"", "\"\xff\xfe\"", `-0`, `-`, `01`, `1.`, `1.5e`, `1e+5`, `1E-5`, `-0.0e0`,
	`1e400`, `18446744073709551615`, `tru`, `true`, `truex`, `nulll`, `[true,false,null]`,
	`{"a":[{"b":[1,{"c":"d"}]}]}`, "{\n\t\"a\" : [ 1 , 2 ] \r}", `{"a":1,"a":2}`, `[}`, `{]`,
	`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}`,
	`{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":[{"type":"text","text":"x"},"odd",{"type":"toolCall","id":"c","name":"bash","arguments":{"x":[1,2]}}],"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.5,"output":1e-3,"cacheRead":0,"cacheWrite":0,"total":1}}}}`,
	`{"type":"custom","customType":"x","data":{"a":1},"id":"b","parentId":"a","timestamp":"t","unknown":[1,{"z":null}]}`,
	`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":[{"type":"text","text":5}],"timestamp":1.5}}`,
	`{"type":"label","id":"x","parentId":"a","targetId":"a","label":"\/\b\f\n\r\t\"\\"}`,
}

func TestScannerCases(t *testing.T) {
	for _, s := range scannerCases {
		checkScanner(t, []byte(s))
	}
}

func checkScanner(t *testing.T, line []byte) {
	t.Helper()
	v, err := codec.ScanValue(line)
	valid := jsontext.Value(line).IsValid(jsonParseOpts...)
	if (err == nil) != valid {
		t.Fatalf("%q: scanner says %v, jsontext valid=%v", line, err, valid)
	}
	if err == nil && !bytes.Equal(v, bytes.TrimSpace(line)) {
		t.Fatalf("%q: scanner read the value %q", line, v)
	}
	for _, strict := range []bool{false, true} {
		decode := codec.DecodeEntry
		if strict {
			decode = codec.DecodeEntryStrict
		}
		got, gerr := decode(line)
		want, werr := codec.DecodeEntryJSONText(line, strict)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q (strict %v): scanner: %v; jsontext: %v", line, strict, gerr, werr)
		}
		if gerr != nil {
			if errors.Is(gerr, codec.ErrMalformed) != errors.Is(werr, codec.ErrMalformed) {
				t.Fatalf("%q (strict %v): errors of different kinds: %v; %v", line, strict, gerr, werr)
			}
			var gm, wm *codec.MemberError
			if errors.As(gerr, &gm) != errors.As(werr, &wm) || (gm != nil && *gm != *wm) {
				t.Fatalf("%q (strict %v): member errors differ: %v; %v", line, strict, gerr, werr)
			}
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q (strict %v): entries differ:\n%#v\n%#v", line, strict, got, want)
		}
	}
}

// The table of repeated values a reader learns stays bounded however many
// distinct values hostile input sends (they are still read whole).
func TestSymbolTableIsBounded(t *testing.T) {
	var values []string
	for i := range 5000 {
		values = append(values, fmt.Sprintf("provider-%d", i))
	}
	held, bound := codec.SymbolsLearnt(values)
	if held != bound {
		t.Fatalf("the table holds %d values after 5000 distinct ones, want its bound %d", held, bound)
	}
	e, err := codec.DecodeEntry([]byte(`{"type":"model_change","id":"a","parentId":null,"timestamp":"t","provider":"` + strings.Repeat("p", 10000) + `","modelId":"m"}`))
	if err != nil || len(e.ModelChange().Provider) != 10000 {
		t.Fatalf("a long value: %v", err)
	}
}
