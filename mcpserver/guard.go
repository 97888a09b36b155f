package mcpserver

// A host is one client, but not necessarily a careful one: a line of
// stdin that is not a JSON-RPC message (a NUL byte, nesting thousands
// deep, a 300 MB line, duplicate keys) must be answered with a JSON-RPC
// error, and what follows it served, rather than end the server (the
// SDK's own reader stops at the first bad line).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/internal/lines"
	"github.com/agentcore/sessionlog/session"
)

// MaxMessageBytes bounds one JSON-RPC message a host sends; MaxDepth its
// nesting (the bound on every member written, session.MaxDepth).
const (
	MaxMessageBytes = 16 << 20
	MaxDepth        = session.MaxDepth
)

// JSON-RPC's error codes for what is not a request.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// CheckMessage says what is wrong with a JSON-RPC message (nil: nothing):
// not JSON (invalid UTF-8 among it), nested deeper than MaxDepth, an
// object with a name twice, not a JSON-RPC 2.0 object (or batch of them).
// code is the JSON-RPC error code to answer with; id the message's id
// when it could be read.
func CheckMessage(msg []byte) (code int, id json.RawMessage, err error) {
	dec := jsontext.NewDecoder(bytes.NewReader(msg))
	depth := 0
	for {
		tok, err := dec.ReadToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return refused(msg, err)
		}
		switch tok.Kind() {
		case '{', '[':
			if depth++; depth > MaxDepth {
				return refused(msg, fmt.Errorf("nested deeper than %d", MaxDepth))
			}
		case '}', ']':
			depth--
		}
	}
	var one []json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(msg), []byte("[")) {
		if err := json.Unmarshal(msg, &one); err != nil || len(one) == 0 {
			return codeInvalidRequest, nil, errors.New("a batch must be a non-empty array of JSON-RPC objects")
		}
	} else {
		one = []json.RawMessage{msg}
	}
	for _, m := range one {
		var probe struct {
			JSONRPC *string         `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  *string         `json:"method"`
			Result  json.RawMessage `json:"result"`
			Error   json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(m, &probe); err != nil {
			return codeInvalidRequest, nil, errors.New("not a JSON-RPC object")
		}
		switch {
		case probe.JSONRPC == nil || *probe.JSONRPC != "2.0":
			return codeInvalidRequest, probe.ID, errors.New(`"jsonrpc" must be "2.0"`)
		case probe.Method == nil && probe.Result == nil && probe.Error == nil:
			return codeInvalidRequest, probe.ID, errors.New("neither a request (method) nor a response (result, error)")
		}
	}
	return 0, nil, nil
}

// refused is CheckMessage's answer to a message it will not read: a
// parse error, or an invalid request with its id when the message is
// JSON that only breaks our rules (a name twice, nesting too deep).
func refused(msg []byte, err error) (int, json.RawMessage, error) {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Valid(msg) && json.Unmarshal(msg, &probe) == nil {
		return codeInvalidRequest, probe.ID, err
	}
	return codeParseError, nil, err
}

// ErrorReply is a JSON-RPC error response, one line (CheckMessage's code
// and id).
func ErrorReply(code int, id json.RawMessage, err error) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": err.Error()}})
	return append(b, '\n')
}

// StdioTransport serves MCP on newline-delimited JSON-RPC (a host's pipes):
// each line is checked (CheckMessage, at most MaxMessageBytes) before the
// SDK reads it, and one that fails is answered with a JSON-RPC error on
// out while the lines after it are served.
type StdioTransport struct {
	In  io.Reader
	Out io.Writer
}

var _ mcp.Transport = (*StdioTransport)(nil)

// Connect implements mcp.Transport. Its reading goroutine ends when In
// ends or the connection is closed (a read of In blocked at that moment
// ends with In, as with the SDK's own transport).
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	out := &lockedWriter{w: t.Out}
	go func() {
		pw.CloseWithError(t.filter(pw, out))
	}()
	return (&mcp.IOTransport{Reader: pr, Writer: out}).Connect(ctx)
}

// filter copies In's good lines to pw and answers the others on out.
func (t *StdioTransport) filter(pw io.Writer, out io.Writer) error {
	var buf []byte
	return lines.Scan(t.In, MaxMessageBytes, func(_ int, line []byte, _ int) error {
		if line == nil {
			_, err := out.Write(ErrorReply(codeParseError, nil, fmt.Errorf("a message longer than %d bytes", MaxMessageBytes)))
			return err
		}
		msg := bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(msg)) == 0 {
			return nil
		}
		if code, id, err := CheckMessage(msg); err != nil {
			_, werr := out.Write(ErrorReply(code, id, err))
			return werr
		}
		buf = append(append(buf[:0], msg...), '\n')
		_, err := pw.Write(buf) // an error: the connection is closed
		return err
	})
}

// lockedWriter lets the SDK's replies and the guard's errors take turns:
// each Write is one whole message.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }
