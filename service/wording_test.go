package service_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/service"
)

// internalWords are what a client must never read in an error: package
// prefixes, placeholders the server fills an entry with before checking
// it, Go's own formatting of values.
var internalWords = []string{"placeholder", "session: ", "stream: ", "codec: ", "service: ", "lifecycle: ", "nats: ", "%!", "<nil>", "*session.", "[]uint8", "jsontext", "json: cannot"}

// Every error path of the write operations answers in the client's terms:
// the code, the member of the request at fault (/entries/3/message/...),
// and a message without the server's internal names.
func TestWriteErrorsAreWordedForClients(t *testing.T) {
	f := start(t, nil)
	f.call(t, api.OpCreate, api.CreateRequest{ID: "w"}, nil)
	var first api.AppendReply
	f.call(t, api.OpAppend, api.AppendRequest{Session: "w", Entries: []jsontext.Value{jsontext.Value(userHi)}}, &first)
	ok := userHi
	msg := func(m string) string { return `{"type":"message","message":` + m + `}` }
	tests := []struct {
		name, op, body string
		code           api.Code
		field          string
		says           string
	}{
		{"create: bad id", api.OpCreate, `{"id":"a b"}`, api.CodeInvalidSessionID, "/id", "a b"},
		{"create: taken", api.OpCreate, `{"id":"w"}`, api.CodeExists, "", "w"},
		{"create: unknown member", api.OpCreate, `{"id":"x","colour":1}`, api.CodeBadRequest, "/colour", "colour"},
		{"append: no session", api.OpAppend, `{"session":"nope","entries":[` + ok + `]}`, api.CodeNotFound, "", "nope"},
		{"append: no entries", api.OpAppend, `{"session":"w","entries":[]}`, api.CodeBadRequest, "/entries", "at least one"},
		{"append: a timestamp beyond JSON's safe integers", api.OpAppend, `{"session":"w","entries":[` + ok + `,` + ok + `,` + ok + `,` + msg(`{"role":"user","content":"hi","timestamp":9007199254740993}`) + `]}`, api.CodeInvalidEntry, "/entries/3/message/timestamp", "9007199254740993"},
		{"append: a bad role", api.OpAppend, `{"session":"w","entries":[` + msg(`{"role":"wizard","content":"hi"}`) + `]}`, api.CodeInvalidEntry, "/entries/0/message/role", "wizard"},
		{"append: a bad id", api.OpAppend, `{"session":"w","entries":[{"type":"message","id":"a b","message":{"role":"user","content":"hi"}}]}`, api.CodeInvalidEntry, "/entries/0/id", "a b"},
		{"append: a missing parent", api.OpAppend, `{"session":"w","parent":"ghost","entries":[` + ok + `]}`, api.CodeParentNotFound, "/parent", "ghost"},
		{"append: a duplicate id", api.OpAppend, `{"session":"w","entries":[{"type":"message","id":"` + first.Entries[0].ID + `","message":{"role":"user","content":"another"}}]}`, api.CodeDuplicateID, "/entries/0/id", first.Entries[0].ID},
		{"append: an unknown member", api.OpAppend, `{"session":"w","entries":[` + ok + `],"colour":1}`, api.CodeBadRequest, "/colour", "colour"},
		{"append: not JSON", api.OpAppend, `{"session":"w","entries":[`, api.CodeBadRequest, "", "malformed"},
		{"append: a stale ifSequence", api.OpAppend, `{"session":"w","ifSequence":1,"entries":[` + ok + `]}`, api.CodeConflict, "", "sequence"},
		{"move: no target", api.OpMove, `{"session":"w","target":"ghost"}`, api.CodeInvalidTarget, "/target", "ghost"},
		{"label: no target", api.OpLabel, `{"session":"w","target":"ghost","label":"x"}`, api.CodeInvalidTarget, "/target", "ghost"},
		{"append: an entry's own missing parent", api.OpAppend, `{"session":"w","entries":[` + ok + `,{"type":"message","parentId":"ghost2","message":{"role":"user","content":"hi"}}]}`, api.CodeParentNotFound, "/entries/1/parentId", "ghost2"},
		{"label: target missing from the request", api.OpLabel, `{"session":"w","label":"x"}`, api.CodeBadRequest, "/target", "target"},
		{"fork: no source", api.OpFork, `{"session":"nope","id":"f1"}`, api.CodeNotFound, "", "nope"},
		{"delete: no session", api.OpDelete, `{"session":"nope"}`, api.CodeNotFound, "", "nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := f.raw(tc.op, tc.body)
			var pe *api.Error
			if !errors.As(err, &pe) {
				t.Fatalf("%s: %v, not a service error", tc.op, err)
			}
			t.Logf("%s %s: %s", pe.Code, pe.Field, pe.Message)
			if pe.Code != tc.code || (tc.field != "" && pe.Field != tc.field) {
				t.Errorf("code %s field %q, want %s %q (%s)", pe.Code, pe.Field, tc.code, tc.field, pe.Message)
			}
			if !strings.Contains(pe.Message, tc.says) {
				t.Errorf("message %q does not mention %q", pe.Message, tc.says)
			}
			for _, w := range internalWords {
				if strings.Contains(pe.Message, w) {
					t.Errorf("message %q says %q", pe.Message, w)
				}
			}
		})
	}
}

func TestPublicMessage(t *testing.T) {
	for in, want := range map[string]string{
		`stream: append to w: session: invalid entry "e1": /message/role bad`: `append to w: invalid entry "e1": /message/role bad`,
		`cannot read (codec: malformed line)`:                                 `cannot read (malformed line)`,
		`the sessions: 3 of them`:                                             `the sessions: 3 of them`,
		`session not found: "session: x"`:                                     `session not found: "session: x"`,
	} {
		if got := service.PublicMessage(in); got != want {
			t.Errorf("PublicMessage(%q) = %q, want %q", in, got, want)
		}
	}
}
