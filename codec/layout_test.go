package codec_test

import (
	"bytes"
	"testing"

	"github.com/agentcore/sessionlog/codec"
)

// Lines whose members are not in the encoder's order come back as they
// were, through JSON and through msgpack: pi 1.6 adds members after an
// assistant message's timestamp, and other writers order as they like.
func TestMemberOrderRoundTrips(t *testing.T) {
	lines := map[string]string{
		"pi 1.6 assistant message":       `{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"anthropic-messages","provider":"anthropic","model":"claude","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":3,"cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.3,"totalFromProvider":true}},"stopReason":"stop","timestamp":1767225600000,"responseId":"msg_1","durationMs":1234}}`,
		"usage entry":                    `{"type":"usage","id":"u","parentId":"b","timestamp":"2026-01-01T00:00:00.000Z","kind":"cache_warm","provider":"anthropic","model":"claude","usage":{"input":1,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":1,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"note":"warm"}`,
		"context_edit replacing":         `{"type":"context_edit","id":"e","parentId":"u","timestamp":"2026-01-01T00:00:00.000Z","targetId":"b","replacement":{"content":[{"type":"text","text":"edited"}]}}`,
		"context_edit removing":          `{"type":"context_edit","id":"e","parentId":"u","timestamp":"2026-01-01T00:00:00.000Z","targetId":"b","replacement":null}`,
		"compaction with system message": `{"type":"compaction","id":"c","parentId":"e","timestamp":"2026-01-01T00:00:00.000Z","summary":"s","firstKeptEntryId":"b","tokensBefore":10,"details":{"x":1},"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"fromHook":false,"systemMessage":{"role":"system","content":"be brief","sections":{"a":"b"},"timestamp":1767225600000}}`,
		"unknown type":                   `{"type":"some_future_type","id":"f","parentId":"c","timestamp":"2026-01-01T00:00:00.000Z","provider":7,"usage":"x","zeta":[1,2],"alpha":{"b":1,"a":2}}`,
		"unknown type, envelope last":    `{"payload":{"k":"v"},"provider":"p","type":"later_type","timestamp":"2026-01-01T00:00:00.000Z","parentId":null,"id":"g"}`,
		"known type, members reordered":  `{"timestamp":"2026-01-01T00:00:00.000Z","id":"h","type":"label","label":"x","parentId":"g","targetId":"g"}`,
		"blocks reordered":               `{"type":"message","id":"i","parentId":"h","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"name":"bash","type":"toolCall","arguments":{},"id":"t1","namespace":"ns"}],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1}}`,
	}
	for name, line := range lines {
		t.Run(name, func(t *testing.T) {
			e, err := codec.DecodeEntry([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			got, err := codec.EncodeEntry(e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, []byte(line)) {
				t.Fatalf("JSON round trip:\n got %s\nwant %s", got, line)
			}
			mp, err := codec.EncodeEntryMsgpack(e)
			if err != nil {
				t.Fatal(err)
			}
			back, err := codec.DecodeEntryMsgpack(mp)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := codec.EncodeEntry(back); !bytes.Equal(got, []byte(line)) {
				t.Fatalf("msgpack round trip:\n got %s\nwant %s", got, line)
			}
			// A strict reader (a client's append) keeps the same.
			if !bytes.Contains([]byte(line), []byte(`"provider":7`)) {
				s, err := codec.DecodeEntryStrict([]byte(line))
				if err != nil {
					t.Fatalf("strict: %v", err)
				}
				if got, _ := codec.EncodeEntry(s); !bytes.Equal(got, []byte(line)) {
					t.Fatalf("strict round trip:\n got %s\nwant %s", got, line)
				}
			}
		})
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
