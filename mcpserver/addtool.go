package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/session"
)

// addTool adds a tool with typed arguments and results, as the SDK's
// mcp.AddTool does, but for two things:
//
//   - Its output schema is inferred from Out as the SDK would, but for the
//     values that are JSON of any shape in Go (json.RawMessage,
//     jsontext.Value, session.Raw): inferred from their Go type they are
//     arrays of bytes, and every reply that held one — a session's
//     metadata object — failed the client's validation.
//   - A result is marshalled once and not validated against that schema
//     again: the SDK reads each result back into maps and walks the schema
//     over it, which cost three times what the service took to answer
//     get_context. The results are ours, made to the schema; the tests
//     check every one they get against it (server_test.go's call).
//
// The arguments are checked against the input schema as the SDK checks
// them, with the same errors.
func addTool[In, Out any](s *mcp.Server, tl *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	in := schemaFor[In](nil)
	tl.InputSchema, tl.OutputSchema = in.schema, schemaFor[Out](&schemaOptions).schema
	s.AddTool(tl, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args In
		if err := decodeArguments(req.Params.Arguments, in.resolved, &args); err != nil {
			return toolFailure(fmt.Errorf("validating \"arguments\": %w", err)), nil
		}
		res, out, err := h(ctx, req, args)
		if err != nil {
			return toolFailure(err), nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("marshaling output: %w", err)
		}
		res.StructuredContent = json.RawMessage(b)
		if res.Content == nil {
			// As the SDK does: the structured result as text too, for
			// clients that read only content.
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
		}
		return res, nil
	})
}

// decodeArguments reads a call's arguments into dst as the SDK does:
// an object (absent: {}), its defaults applied, checked against the
// input schema, then decoded.
func decodeArguments(raw json.RawMessage, rs *jsonschema.Resolved, dst any) error {
	m := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("unmarshaling arguments: %w", err)
		}
	}
	if err := rs.ApplyDefaults(&m); err != nil {
		return fmt.Errorf("applying schema defaults:\n%w", err)
	}
	if err := rs.Validate(&m); err != nil {
		return err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

func toolFailure(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}

// schemaOptions describes JSON values held verbatim as any JSON value.
var schemaOptions = jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
	reflect.TypeFor[jsontext.Value]():  {},
	reflect.TypeFor[session.Raw]():     {},
}}

// resolvedSchema is a type's schema, inferred and resolved once per
// process: every server (one per gateway caller, one per stdio run)
// registers the same tools (the SDK's SchemaCache serves only mcp.AddTool).
type resolvedSchema struct {
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
}

var toolSchemas sync.Map // reflect.Type -> resolvedSchema

func schemaFor[T any](opts *jsonschema.ForOptions) resolvedSchema {
	t := reflect.TypeFor[T]()
	if rs, ok := toolSchemas.Load(t); ok {
		return rs.(resolvedSchema)
	}
	schema, err := jsonschema.For[T](opts)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: the schema of %v: %v", t, err))
	}
	resolved, err := schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: the schema of %v: %v", t, err))
	}
	rs, _ := toolSchemas.LoadOrStore(t, resolvedSchema{schema, resolved})
	return rs.(resolvedSchema)
}
