package codec_test

import (
	"errors"
	"testing"

	"github.com/agentcore/sessionlog/codec"
)

func TestDecodeEntryStrict(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		wantPointer string // "" = accepted
		wantErr     error
	}{
		{name: "message without id or parent", in: `{"type":"message","message":{"role":"user","content":"hi","timestamp":1}}`},
		{name: "full entry", in: `{"type":"label","id":"a","parentId":"b","timestamp":"2025-01-01T00:00:00.000Z","targetId":"b","label":"x"}`},
		// pi adds members from one release to the next: unknown ones are
		// kept verbatim, known ones are checked.
		{name: "unknown top-level member", in: `{"type":"message","colour":"red","message":{"role":"user","content":"hi"}}`},
		{name: "unknown member of usage", in: `{"type":"message","message":{"role":"assistant","content":[],"usage":{"bogus":1}}}`},
		{name: "an unknown type", in: `{"type":"some_future_type","id":"a","parentId":null,"timestamp":"t","kind":3,"replacement":7,"message":"x"}`},
		{name: "a usage entry", in: `{"type":"usage","kind":"cache_warm","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"note":"n"}`},
		{name: "a context_edit that removes", in: `{"type":"context_edit","targetId":"a","replacement":null}`},
		{name: "a context_edit that replaces", in: `{"type":"context_edit","targetId":"a","replacement":{"content":[{"type":"text","text":"x"}]}}`},
		{name: "a replacement of the wrong kind", in: `{"type":"context_edit","targetId":"a","replacement":7}`,
			wantPointer: "/replacement", wantErr: codec.ErrMalformed},
		{name: "a usage entry's kind of the wrong kind", in: `{"type":"usage","kind":3}`,
			wantPointer: "/kind", wantErr: codec.ErrMalformed},
		{name: "a system message of the wrong kind", in: `{"type":"compaction","systemMessage":"x"}`,
			wantPointer: "/systemMessage", wantErr: codec.ErrMalformed},
		{name: "wrong kind of a known member", in: `{"type":"thinking_level_change","thinkingLevel":3}`,
			wantPointer: "/thinkingLevel", wantErr: codec.ErrMalformed},
		{name: "wrong kind inside the message", in: `{"type":"message","message":{"role":5,"content":"hi"}}`,
			wantPointer: "/message/role", wantErr: codec.ErrMalformed},
		{name: "id of the wrong kind", in: `{"type":"message","id":7}`, wantErr: codec.ErrMalformed},
		{name: "no type", in: `{"id":"a"}`, wantErr: codec.ErrMalformed},
		{name: "trailing text", in: `{"type":"label"} x`, wantErr: codec.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := codec.DecodeEntryStrict([]byte(tt.in))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			var me *codec.MemberError
			if tt.wantPointer != "" && (!errors.As(err, &me) || me.Pointer != tt.wantPointer) {
				t.Fatalf("err = %v, want a MemberError at %s", err, tt.wantPointer)
			}
			// The lenient decoder keeps what the strict one refuses.
			if me != nil {
				if _, lerr := codec.DecodeLegacyEntry([]byte(tt.in)); lerr != nil {
					t.Fatalf("lenient decode: %v", lerr)
				}
			}
		})
	}
}

// A member of the wrong kind is named by its place in the line whether
// it comes before or after the member naming its object's kind (a
// message's role, a block's type): members read before it are held and
// decoded apart.
func TestStrictNamesHeldMembers(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"assistant","stopReason":5,"content":"x","timestamp":1}}`, "/message/stopReason"},
		{`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"stopReason":5,"role":"assistant","content":"x","timestamp":1}}`, "/message/stopReason"},
		{`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":5}],"timestamp":1}}`, "/message/content/0/text"},
		{`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"text":5,"type":"text"}],"timestamp":1}}`, "/message/content/0/text"},
		{`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"usage":{"input":"x"},"role":"assistant","content":"x","timestamp":1}}`, "/message/usage/input"},
	} {
		_, err := codec.DecodeEntryStrict([]byte(c.line))
		var me *codec.MemberError
		if !errors.As(err, &me) || me.Pointer != c.want {
			t.Errorf("%s: got %v, want a MemberError at %s", c.line, err, c.want)
		}
	}
}
