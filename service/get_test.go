package service_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/service"
)

// get answers one entry by its id, as entries gives it (content stored
// apart resolved unless refs); a missing entry or a bad id is refused,
// naming it.
func TestGetEntry(t *testing.T) {
	f := start(t, func(c *service.Config) {})
	f.call(t, api.OpCreate, api.CreateRequest{ID: "g"}, nil)
	img := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("pixels", 40<<10)))
	var a api.AppendReply
	f.call(t, api.OpAppend, api.AppendRequest{Session: "g", Entries: []jsontext.Value{
		jsontext.Value(`{"type":"message","message":{"role":"user","content":"hello","timestamp":1}}`),
		jsontext.Value(`{"type":"message","message":{"role":"user","content":[{"type":"image","data":"` + img + `","mimeType":"image/png"}],"timestamp":2}}`),
	}}, &a)
	var all api.EntriesReply
	f.call(t, api.OpEntries, api.EntriesRequest{Session: "g"}, &all)
	for i, e := range a.Entries {
		var got api.GetReply
		f.call(t, api.OpGet, api.GetRequest{Session: "g", Entry: e.ID}, &got)
		if string(got.Entry) != string(all.Entries[i]) || got.Sequence != all.Sequence {
			t.Fatalf("get %s:\n%.200s\nentries gives\n%.200s", e.ID, got.Entry, all.Entries[i])
		}
	}
	var ref api.GetReply
	f.call(t, api.OpGet, api.GetRequest{Session: "g", Entry: a.Entries[1].ID, Refs: true}, &ref)
	if !strings.Contains(string(ref.Entry), `"$blob"`) || strings.Contains(string(ref.Entry), img[:100]) {
		t.Fatalf("get with refs: %.300s", ref.Entry)
	}
	for _, tt := range []struct {
		req   api.GetRequest
		code  api.Code
		field string
	}{
		{api.GetRequest{Session: "g", Entry: "nosuch"}, api.CodeEntryNotFound, "/entry"},
		{api.GetRequest{Session: "g", Entry: "has space"}, api.CodeBadRequest, "/entry"},
		{api.GetRequest{Session: "g", Entry: ""}, api.CodeBadRequest, "/entry"},
		{api.GetRequest{Session: "nosuch", Entry: "x"}, api.CodeNotFound, ""},
		{api.GetRequest{Session: "a.b", Entry: "x"}, api.CodeInvalidSessionID, "/session"},
	} {
		err := f.callErr(api.OpGet, tt.req)
		var se *api.Error
		if !errors.As(err, &se) || se.Code != tt.code || se.Field != tt.field {
			t.Errorf("get %+v: %v, want %s at %q", tt.req, err, tt.code, tt.field)
		}
	}
}
