package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	slapi "github.com/agentcore/sessionlog/api"
)

// A node whose storage is used up refuses writes as unavailable, naming
// the node and what is full, and goes on answering reads (issue 69: the
// client read "500 internal" with JetStream's "insufficient resources").
func TestFullStorageIsRefusedClearly(t *testing.T) {
	data := t.TempDir()
	serveFor(t, data, "-http", "", "-name", "n-full", "-max-store", fmt.Sprint(6<<20))
	c := slapi.NewClient(connectServe(t, data), slapi.DefaultSubject)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Call(ctx, slapi.OpCreate, slapi.CreateRequest{ID: "full"}, nil); err != nil {
		t.Fatal(err)
	}
	line := jsontext.Value(`{"type":"message","message":{"role":"user","content":"` + strings.Repeat("f", 100<<10) + `"}}`)
	var refused *slapi.Error
	stored := 0
	for range 200 {
		err := c.Call(ctx, slapi.OpAppend, slapi.AppendRequest{Session: "full", Entries: []jsontext.Value{line}}, nil)
		if errors.As(err, &refused) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		stored++
	}
	if refused == nil {
		t.Fatalf("200 appends of 100 KB stored on a node of 6 MiB")
	}
	if refused.Code != slapi.CodeUnavailable || !strings.Contains(refused.Message, "storage of node n-full is full") {
		t.Fatalf("after %d appends: %v, want unavailable naming the full node", stored, refused)
	}
	var cr slapi.ContextReply
	if err := c.Call(ctx, slapi.OpContext, slapi.ContextRequest{Session: "full"}, &cr); err != nil {
		t.Fatalf("a read on a full node: %v", err)
	}
	if cr.Total != stored {
		t.Fatalf("the context holds %d messages, %d were acknowledged", cr.Total, stored)
	}
}

// status says how much of the data dir's file system is free, and warns
// below -disk-warn (here: always, at 100%), naming the node.
func TestStatusSaysFreeStorage(t *testing.T) {
	for _, tc := range []struct {
		warn string
		want string
		fail bool
	}{{"0", "note: storage: ", false}, {"100", "storage of node n-disk: only ", true}} {
		data := t.TempDir()
		serveFor(t, data, "-http", "", "-name", "n-disk", "-disk-warn", tc.warn)
		url, err := os.ReadFile(serveURLFile(data))
		if err != nil {
			t.Fatal(err)
		}
		code, out, _ := runIn(t, "", "", "status", "-url", strings.TrimSpace(string(url)))
		if !strings.Contains(out, tc.want) || (code != 0) != tc.fail || !strings.Contains(out, data) {
			t.Fatalf("-disk-warn %s: exit %d:\n%s", tc.warn, code, out)
		}
	}
}
