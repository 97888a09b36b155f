package service_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/service"
)

// get answers one entry by its id, as entries gives it (content stored
// apart resolved unless refs); a missing entry or a bad id is refused,
// naming it.
func TestGetEntry(t *testing.T) {
	f := start(t, func(c *service.Config) {})
	f.call(t, service.OpCreate, service.CreateRequest{ID: "g"}, nil)
	img := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("pixels", 40<<10)))
	var a service.AppendReply
	f.call(t, service.OpAppend, service.AppendRequest{Session: "g", Entries: []jsontext.Value{
		jsontext.Value(`{"type":"message","message":{"role":"user","content":"hello","timestamp":1}}`),
		jsontext.Value(`{"type":"message","message":{"role":"user","content":[{"type":"image","data":"` + img + `","mimeType":"image/png"}],"timestamp":2}}`),
	}}, &a)
	var all service.EntriesReply
	f.call(t, service.OpEntries, service.EntriesRequest{Session: "g"}, &all)
	for i, e := range a.Entries {
		var got service.GetReply
		f.call(t, service.OpGet, service.GetRequest{Session: "g", Entry: e.ID}, &got)
		if string(got.Entry) != string(all.Entries[i]) || got.Sequence != all.Sequence {
			t.Fatalf("get %s:\n%.200s\nentries gives\n%.200s", e.ID, got.Entry, all.Entries[i])
		}
	}
	var ref service.GetReply
	f.call(t, service.OpGet, service.GetRequest{Session: "g", Entry: a.Entries[1].ID, Refs: true}, &ref)
	if !strings.Contains(string(ref.Entry), `"$blob"`) || strings.Contains(string(ref.Entry), img[:100]) {
		t.Fatalf("get with refs: %.300s", ref.Entry)
	}
	for _, tt := range []struct {
		req   service.GetRequest
		code  service.Code
		field string
	}{
		{service.GetRequest{Session: "g", Entry: "nosuch"}, service.CodeEntryNotFound, "/entry"},
		{service.GetRequest{Session: "g", Entry: "has space"}, service.CodeBadRequest, "/entry"},
		{service.GetRequest{Session: "g", Entry: ""}, service.CodeBadRequest, "/entry"},
		{service.GetRequest{Session: "nosuch", Entry: "x"}, service.CodeNotFound, ""},
		{service.GetRequest{Session: "a.b", Entry: "x"}, service.CodeInvalidSessionID, "/session"},
	} {
		err := f.callErr(service.OpGet, tt.req)
		var se *service.Error
		if !errors.As(err, &se) || se.Code != tt.code || se.Field != tt.field {
			t.Errorf("get %+v: %v, want %s at %q", tt.req, err, tt.code, tt.field)
		}
	}
}
