package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	slapi "github.com/agentcore/sessionlog/api"

	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/session"
)

func runContext(ctx context.Context, e env) error {
	var at *string
	flags := func(fs *flag.FlagSet) {
		at = fs.String("at", "", "build the context of the branch ending at this entry instead of the leaf")
	}
	return sessionVerb(ctx, e, "context", flags, func(sess *session.Session) error { return printContext(ctx, e, sess, *at) })
}

func printContext(ctx context.Context, e env, sess *session.Session, at string) error {
	var opts []session.ContextOption
	if at != "" {
		opts = append(opts, session.FromEntry(at))
	}
	c, err := sess.BuildContext(ctx, opts...)
	if err != nil {
		return err
	}
	// Messages are written with the pi codec, so the output is exactly
	// what pi would feed its model.
	var msgs bytes.Buffer
	msgs.WriteByte('[')
	for i := range c.Messages {
		if i > 0 {
			msgs.WriteByte(',')
		}
		b, err := codec.EncodeMessage(c.Messages[i])
		if err != nil {
			return err
		}
		msgs.Write(b)
	}
	msgs.WriteByte(']')
	out := map[string]any{
		"thinkingLevel": c.ThinkingLevel,
		"model":         nil,
		"messages":      json.RawMessage(msgs.Bytes()),
		"sources":       c.Sources,
	}
	if c.Model != nil {
		out["model"] = map[string]string{"provider": c.Model.Provider, "modelId": c.Model.ModelID}
	}
	if c.ActiveTools != nil {
		out["activeTools"] = c.ActiveTools
	}
	if c.Compaction != nil {
		out["compaction"] = c.Compaction.ID
	}
	if at == "" {
		// The context of the leaf leaves out what other nodes wrote
		// while apart: said beside it, as the protocol's reply does.
		apart, err := sess.Apart(ctx)
		if err != nil {
			return err
		}
		if len(apart) > 0 {
			out["apart"] = slapi.ApartOf(apart)
			printApart(e.stderr, apart)
		}
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
