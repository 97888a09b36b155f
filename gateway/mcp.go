package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/mcpserver"
)

// callerKey carries the admitted caller's connection to the MCP server
// made for its request.
type callerKey struct{}

// mcpHandler serves the Model Context Protocol over streamable HTTP,
// stateless: each request is admitted like an operation (credentials, rate)
// and answered by a server on the caller's own connection, so a caller's
// tools reach its tenant's sessions and no other.
func (g *Gateway) mcpHandler(cfg mcpserver.Config) http.Handler {
	cfg.Subscriptions = false // a stateless server keeps none
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		u, _ := r.Context().Value(callerKey{}).(*userConn)
		if u == nil {
			return nil
		}
		// One server per caller's connection, made at its first call: a
		// server costs its tools' registration (milliseconds), and a
		// stateless one keeps nothing between calls.
		u.mcpOnce.Do(func() {
			if s, err := mcpserver.New(cfg, u.c); err == nil {
				u.mcp = s.Server // no subscriptions: nothing to close
			}
		})
		return u.mcp
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, r, end := g.trace(w, r, "mcp")
		defer end()
		u, release, ok := g.admit(w, r)
		if !ok {
			return
		}
		defer release()
		r.Body = http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes)
		if r.Method == http.MethodPost {
			// What the stdio server refuses line by line, refused here
			// the same way (a name twice, nesting past the bound, not
			// JSON-RPC), before the SDK reads it.
			body, err := io.ReadAll(r.Body)
			if err != nil {
				writeError(w, &api.Error{Code: api.CodeTooLarge, Message: err.Error()}, http.StatusRequestEntityTooLarge)
				return
			}
			if code, id, err := mcpserver.CheckMessage(body); err != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				w.Write(mcpserver.ErrorReply(code, id, err))
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), callerKey{}, u), g.cfg.RequestTimeout)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
