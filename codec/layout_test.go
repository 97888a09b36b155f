package codec_test

import (
	"bytes"
	"testing"

	"github.com/agentcore/sessionlog/codec"
)

// What a client sends is kept as a file's line is: a strict reader keeps
// the members it does not know, in their order.
func TestStrictKeepsOrderAndUnknownMembers(t *testing.T) {
	for _, line := range []string{
		`{"type":"usage","id":"u","parentId":"b","timestamp":"2026-01-01T00:00:00.000Z","kind":"cache_warm","provider":"anthropic","model":"claude","usage":{"input":1,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":1,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"note":"warm"}`,
		`{"payload":{"k":"v"},"provider":"p","type":"later_type","timestamp":"2026-01-01T00:00:00.000Z","parentId":null,"id":"g"}`,
		`{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1,"responseId":"r","durationMs":5,"colour":"red"}}`,
	} {
		e, err := codec.DecodeEntryStrict([]byte(line))
		if err != nil {
			t.Fatalf("strict: %v", err)
		}
		if got, _ := codec.EncodeEntry(e); !bytes.Equal(got, []byte(line)) {
			t.Fatalf("strict round trip:\n got %s\nwant %s", got, line)
		}
	}
}

// An unknown type keeps every member verbatim, whatever a known type
// would make of it.
func TestUnknownTypeIsOpaque(t *testing.T) {
	e, err := codec.DecodeEntry([]byte(`{"provider":"p","type":"x_y","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Provider != "" || e.Message != nil || len(e.Extra) != 2 || e.Extra[0].Key != "provider" || e.Extra[1].Key != "message" {
		t.Fatalf("unknown type decoded into known fields: %+v", e)
	}
}
