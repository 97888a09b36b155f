package codec_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
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
	if e.Body != nil || e.Message != nil || len(e.Extra) != 2 || e.Extra[0].Key != "provider" || e.Extra[1].Key != "message" {
		t.Fatalf("unknown type decoded into known fields: %+v", e)
	}
}

// A member another type defines is kept verbatim, in place, whether the
// line names its type before it or after: an entry holds only its own
// type's members (session.Body).
func TestMembersOfAnotherTypeAreVerbatim(t *testing.T) {
	for _, line := range []string{
		`{"type":"label","id":"a","parentId":null,"timestamp":"t","summary":"s  ","targetId":"b","label":"x","message":{"role":"user"}}`,
		`{"summary":"s  ","id":"a","parentId":null,"timestamp":"t","targetId":"b","label":"x","type":"label","message":{"role":"user"}}`,
		`{"id":"a","targetId":"b","parentId":null,"timestamp":"t","label":"x","tokensBefore":1.5e3,"type":"label"}`,
	} {
		e, err := codec.DecodeEntry([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		l := e.Label()
		if l == nil || l.TargetID != "b" || l.Label != "x" || e.Message != nil {
			t.Fatalf("%s: the label's own members: %+v", line, e)
		}
		for _, f := range e.Extra {
			if f.Key == "targetId" || f.Key == "label" {
				t.Errorf("%s: its own member %q kept verbatim", line, f.Key)
			}
		}
		if len(e.Extra) == 0 {
			t.Errorf("%s: the other types' members were dropped", line)
		}
		got, err := codec.EncodeEntry(e)
		if err != nil || string(got) != line {
			t.Fatalf("round trip: %v\n got %s\nwant %s", err, got, line)
		}
	}
}

// A content block holds its own type's members; another type's are kept
// verbatim, whether the block names its type first or last.
func TestBlockMembersByType(t *testing.T) {
	for _, c := range []struct{ block, name string }{
		{`{"type":"toolCall","id":"c1","name":"read","arguments":{"p":1},"text":"x"}`, "read"},
		{`{"id":"c1","text":"x","name":"read","arguments":{"p":1},"type":"toolCall"}`, "read"},
		{`{"mimeType":"image/png","data":"aGk=","type":"image","thinking":"t"}`, ""},
		{`{"data":"aGk=","name":"n","type":"video"}`, ""},
	} {
		line := `{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[` + c.block + `],"timestamp":1}}`
		e, err := codec.DecodeEntry([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		b := e.Message.Content.Blocks[0]
		switch body := b.Body.(type) {
		case *session.ToolCallBlock:
			if body.Name != c.name || body.ID != "c1" || string(body.Arguments) != `{"p":1}` || b.Text != "" {
				t.Errorf("%s: tool call %+v, text %q", c.block, body, b.Text)
			}
		case *session.ImageBlock:
			if body.Data != "aGk=" || body.MimeType != "image/png" {
				t.Errorf("%s: image %+v", c.block, body)
			}
		case nil:
			if b.Type != "video" || len(b.Extra) != 2 {
				t.Errorf("%s: an unknown type's members: %+v", c.block, b)
			}
		}
		if b.Type != "video" && len(b.Extra) != 1 {
			t.Errorf("%s: another type's member not kept verbatim: %+v", c.block, b.Extra)
		}
		got, err := codec.EncodeEntry(e)
		if err != nil || string(got) != line {
			t.Fatalf("round trip: %v\n got %s\nwant %s", err, got, line)
		}
	}
}

// manyMembers is an entry with n unknown members (one of them twice),
// out of the encoder's order.
func manyMembers(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"message","message":{"role":"user","content":"x","timestamp":1}`)
	for i := range n {
		fmt.Fprintf(&b, `,"k%d":%d`, i, i)
	}
	b.WriteString(`,"k1":"again","id":"a","parentId":null,"timestamp":"t"}`)
	return b.String()
}

// An object of very many members — what a hostile client may send now
// that unknown members are kept — decodes in time linear in its size (the
// sets behind the decoder and encoder leave their slices for maps), and
// keeps what JSON.parse keeps: a name given twice has its last value in
// its first place.
func TestManyMembers(t *testing.T) {
	line := manyMembers(20000)
	e, err := codec.DecodeEntryStrict([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Extra) != 20000 || e.Extra[1].Key != "k1" || string(e.Extra[1].Value) != `"again"` {
		t.Fatalf("%d members kept; k1 = %s", len(e.Extra), e.Extra[1].Value)
	}
	out, err := codec.EncodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	back, err := codec.DecodeEntry(out)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := codec.EncodeEntry(back); !bytes.Equal(again, out) || !strings.Contains(string(out), `"k1":"again","k2":2`) {
		t.Fatalf("not stable, or k1 moved: %.200s", out)
	}
}
