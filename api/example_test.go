package api_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"

	"github.com/agentcore/sessionlog/api"
)

// A Go program calls a sessionlog node (sessionlog serve) over NATS.
func ExampleClient() {
	nc, err := nats.Connect("nats://127.0.0.1:4222")
	if err != nil {
		return
	}
	defer nc.Close()
	c := api.NewClient(nc, "sessionlog.v1")
	ctx := context.Background()
	if err := c.Call(ctx, api.OpCreate, api.CreateRequest{ID: "s1"}, nil); err != nil {
		return
	}
	var r api.AppendReply
	err = c.Call(ctx, api.OpAppend, api.AppendRequest{Session: "s1", Entries: []jsontext.Value{
		jsontext.Value(`{"type":"message","message":{"role":"user","content":"add retries"}}`)}}, &r)
	var pe *api.Error
	switch {
	case errors.As(err, &pe) && pe.Code == api.CodeConflict:
		fmt.Println("another writer got there first; the leaf is now", pe.Leaf)
	case err == nil:
		fmt.Println("stored", r.Entries[0].ID, "at", r.Sequence)
	}
}
