package gateway

import (
	"github.com/nats-io/nats.go"

	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/console"
	"github.com/agentcore/sessionlog/service"
	"github.com/agentcore/sessionlog/telemetry"
)

// routes maps the REST shape onto the service's operations. Bodies are
// the service's requests; the session of a path is added to them.
func (g *Gateway) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern, op string, build builder) { mux.Handle(pattern, g.op(op, build)) }
	handle("POST /v1/sessions", api.OpCreate, body)
	handle("GET /v1/sessions", api.OpList, listQuery)
	handle("GET /v1/sessions/{id}", api.OpOpen, query(read(nil)))
	handle("DELETE /v1/sessions/{id}", api.OpDelete, pathOnly)
	handle("POST /v1/sessions/{id}/entries", api.OpAppend, g.appendBody)
	handle("GET /v1/sessions/{id}/entries", api.OpEntries, query(read(map[string]bool{"offset": true, "limit": true, "refs": false})))
	handle("GET /v1/sessions/{id}/entries/{entry}", api.OpGet, query(read(map[string]bool{"refs": false})))
	handle("POST /v1/sessions/{id}/move", api.OpMove, bodyWithPath)
	handle("POST /v1/sessions/{id}/label", api.OpLabel, bodyWithPath)
	handle("POST /v1/sessions/{id}/name", api.OpName, bodyWithPath)
	handle("POST /v1/sessions/{id}/fork", api.OpFork, bodyWithPath)
	handle("GET /v1/sessions/{id}/context", api.OpContext, query(read(map[string]bool{"at": false, "offset": true, "refs": false})))
	handle("POST /v1/blobs", api.OpPutBlob, g.blobBody)
	mux.HandleFunc("GET /v1/blobs/{sha256}", g.getBlob)
	handle("GET /v1/sessions/{id}/tree", api.OpTree, query(read(map[string]bool{"offset": true})))
	handle("GET /v1/sessions/{id}/stats", api.OpStats, query(read(map[string]bool{"timeline": false})))
	handle("GET /v1/search", api.OpSearch, searchQuery)
	handle("GET /v1/usage", api.OpUsage, usageQuery)
	handle("GET /v1/sessions/{id}/wait", api.OpWait, query(map[string]bool{"sequence": true, "timeoutMs": true}))
	mux.HandleFunc("GET /v1/sessions/{id}/events", g.events)
	// Any operation by name, body as on NATS.
	mux.Handle("POST /v1/ops/{op}", g.op("", body))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	})
	mux.HandleFunc("GET /readyz", g.readyz)
	// The console: its page behind the same credentials as the API (the
	// browser asks once, then sends them with the page's API calls).
	mux.Handle("GET "+console.Prefix, g.authenticated(console.Handler()))
	if g.cfg.MCP != nil {
		mux.Handle("/mcp", g.mcpHandler(*g.cfg.MCP))
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, console.Prefix, http.StatusFound)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &api.Error{Code: "not_found", Message: fmt.Sprintf("no route %s %s (see docs/protocol.md, Over HTTP)", r.Method, r.URL.Path)}, http.StatusNotFound)
	})
	return validURL(mux)
}

// validURL refuses a request whose path or query is not UTF-8 once
// decoded (a session or entry id of %ff, say): every id and parameter is
// text, and would fail later as an internal error.
func validURL(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !utf8.ValidString(r.URL.Path) {
			writeError(w, &api.Error{Code: api.CodeBadRequest, Field: "path", Message: fmt.Sprintf("the path %q is not UTF-8 once decoded", r.URL.EscapedPath())}, http.StatusBadRequest)
			return
		}
		for k, vs := range r.URL.Query() {
			for _, v := range append([]string{k}, vs...) {
				if !utf8.ValidString(v) {
					writeError(w, &api.Error{Code: api.CodeBadRequest, Field: "?" + strings.ToValidUTF8(k, "\uFFFD"), Message: "a query parameter is not UTF-8 once decoded"}, http.StatusBadRequest)
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// builder makes the service request body of an HTTP request.
type builder func(r *http.Request, maxBody int64) ([]byte, error)

func readBody(r *http.Request, maxBody int64) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, &api.Error{Code: api.CodeTooLarge, Message: fmt.Sprintf("request body over the limit of %d bytes", maxBody)}
	}
	if err != nil {
		return nil, &api.Error{Code: api.CodeBadRequest, Message: "reading the body: " + err.Error()}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("{}"), nil
	}
	return b, nil
}

func body(r *http.Request, maxBody int64) ([]byte, error) { return readBody(r, maxBody) }

// bodyWithPath adds the path's session to the body object. A body naming
// a session too is refused by the service (duplicate member).
func bodyWithPath(r *http.Request, maxBody int64) ([]byte, error) {
	b, err := readBody(r, maxBody)
	if err != nil {
		return nil, err
	}
	return withPath(r, b)
}

func withPath(r *http.Request, b []byte) ([]byte, error) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return nil, &api.Error{Code: api.CodeBadRequest, Message: "the body must be a JSON object"}
	}
	sess, _ := json.Marshal(r.PathValue("id"))
	out := append([]byte(`{"session":`), sess...)
	if rest := bytes.TrimSpace(b[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

func pathOnly(r *http.Request, _ int64) ([]byte, error) {
	if len(r.URL.Query()) > 0 {
		for k := range r.URL.Query() {
			return nil, &api.Error{Code: api.CodeBadRequest, Field: "?" + k, Message: fmt.Sprintf("unknown query parameter %q", k)}
		}
	}
	return json.Marshal(map[string]string{"session": r.PathValue("id")})
}

// read adds a read's freshness (api.Freshness) to its parameters.
func read(params map[string]bool) map[string]bool {
	out := map[string]bool{"consistency": false, "maxLagMs": true}
	for k, v := range params {
		out[k] = v
	}
	return out
}

// query turns query parameters into the request: params maps each
// allowed name to whether it is a number.
func query(params map[string]bool) builder {
	return func(r *http.Request, _ int64) ([]byte, error) {
		req := map[string]any{}
		if id := r.PathValue("id"); id != "" {
			req["session"] = id
		}
		if entry := r.PathValue("entry"); entry != "" {
			req["entry"] = entry
		}
		for k, vs := range r.URL.Query() {
			numeric, ok := params[k]
			switch {
			case !ok:
				return nil, &api.Error{Code: api.CodeBadRequest, Field: "?" + k, Message: fmt.Sprintf("unknown query parameter %q", k)}
			case len(vs) != 1:
				return nil, &api.Error{Code: api.CodeBadRequest, Field: "?" + k, Message: fmt.Sprintf("query parameter %q given %d times", k, len(vs))}
			case k == "refs" || k == "timeline":
				b, err := boolParam(k, vs[0])
				if err != nil {
					return nil, err
				}
				req[k] = b
			case numeric:
				n, err := strconv.ParseInt(vs[0], 10, 64)
				if err != nil {
					return nil, &api.Error{Code: api.CodeBadRequest, Field: "?" + k, Message: fmt.Sprintf("query parameter %q must be an integer, not %q", k, vs[0])}
				}
				req[k] = n
			default:
				req[k] = vs[0]
			}
		}
		return json.Marshal(req)
	}
}

// op serves one operation: rate limit, the caller's connection, the
// request, the reply.
func (g *Gateway) op(op string, build builder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, r, end := g.trace(w, r, op)
		defer end()
		name := op
		if name == "" {
			name = r.PathValue("op")
			if !knownOp(name) {
				writeError(w, &api.Error{Code: "not_found", Message: fmt.Sprintf("no operation %q", name)}, http.StatusNotFound)
				return
			}
		}
		u, release, ok := g.admit(w, r)
		if !ok {
			return
		}
		defer release()
		req, err := build(r, g.cfg.MaxBodyBytes)
		var lb *largeBody
		if err != nil && !errors.As(err, &lb) {
			writeError(w, err, 0)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), g.cfg.RequestTimeout)
		defer cancel()
		if lb != nil {
			// Each piece of the body must come within ReadTimeout.
			req, err = g.stage(ctx, u, lb, name, r, w)
			if err != nil {
				writeError(w, err, 0)
				return
			}
		}
		longLived(w)
		// Content stored apart is asked for by reference and resolved
		// here, item by item, unless the caller wants the references.
		resolve := false
		if _, ok := resolvedItems[name]; ok && r.Method == http.MethodGet && !r.URL.Query().Has("refs") {
			resolve = true
			req = append(bytes.TrimSuffix(bytes.TrimSpace(req), []byte("}")), `,"refs":true}`...)
		}
		var reply []byte
		if _, paged := pagedItems[name]; paged && r.Method == http.MethodGet && !r.URL.Query().Has("offset") {
			var m map[string]any
			if err = json.Unmarshal(req, &m); err == nil {
				reply, err = g.assemble(ctx, u, name, m)
			}
		} else {
			reply, err = u.c.Raw(ctx, name, req)
		}
		if err != nil {
			writeError(w, err, 0)
			return
		}
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(g.cfg.WriteTimeout))
		if resolve {
			// Once the reply has begun (a client gone mid-reply), an
			// error can no longer be answered: the connection is cut.
			ww := &wroteWriter{ResponseWriter: w}
			if err := g.writeResolved(ww, ctx, u, name, reply); err != nil && !ww.wrote {
				writeError(w, err, 0)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(reply)
	})
}

// authenticated serves h to callers the gateway admits (credentials
// checked, rate limited), like an operation.
func (g *Gateway) authenticated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, release, ok := g.admit(w, r)
		if !ok {
			return
		}
		defer release()
		h.ServeHTTP(w, r)
	})
}

// readyz answers 200 when the node can serve (Config.Ready), 503 with
// what is missing otherwise.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	err := g.ctx.Err()
	if err == nil && g.cfg.Ready != nil {
		err = g.cfg.Ready()
	}
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		b, _ := json.Marshal(map[string]string{"status": "not ready", "reason": err.Error()})
		w.Write(b)
		return
	}
	io.WriteString(w, `{"status":"ready"}`)
}

// longLived lifts the read deadline once a request is read: the server
// would otherwise cancel a long wait (or an event stream) when
// ReadTimeout passes. Writes keep their own deadlines.
func longLived(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
}

// trace starts the server span of an HTTP request, continuing the
// caller's trace (traceparent header); the request's context carries it on
// to the service.
func (g *Gateway) trace(w http.ResponseWriter, r *http.Request, op string) (http.ResponseWriter, *http.Request, func()) {
	tel := g.cfg.Telemetry
	ctx := tel.Propagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	route := r.Pattern // "POST /v1/sessions/{id}/entries"
	if _, path, ok := strings.Cut(route, " "); ok {
		route = path
	}
	ctx, span := tel.Tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer))
	if !span.IsRecording() {
		span.End()
		return w, r.WithContext(ctx), func() {}
	}
	span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
		attribute.String("http.route", route), telemetry.OpKey.String(cmp.Or(op, r.PathValue("op"))))
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	return sw, r.WithContext(ctx), func() {
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
		span.End()
	}
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// wroteWriter remembers whether anything was written.
type wroteWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *wroteWriter) WriteHeader(code int) { w.wrote = true; w.ResponseWriter.WriteHeader(code) }

func (w *wroteWriter) Write(b []byte) (int, error) { w.wrote = true; return w.ResponseWriter.Write(b) }

// Unwrap lets http.ResponseController reach the connection.
func (w *wroteWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush lets event streams flush through the wrapper.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func knownOp(op string) bool {
	for _, o := range api.Ops {
		if o == op {
			return true
		}
	}
	return false
}

// statusOf maps protocol codes onto HTTP statuses.
func statusOf(c api.Code) int {
	switch c {
	case api.CodeBadRequest, api.CodeInvalidSessionID:
		return http.StatusBadRequest
	case api.CodeInvalidEntry, api.CodeParentNotFound, api.CodeInvalidTarget:
		return http.StatusUnprocessableEntity
	case api.CodeNotFound, api.CodeEntryNotFound, api.CodeBlobNotFound, api.CodeUploadNotFound:
		return http.StatusNotFound
	case api.CodeExists, api.CodeDuplicateID, api.CodeConflict:
		return http.StatusConflict
	case api.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case api.CodeRateLimited:
		return http.StatusTooManyRequests
	case api.CodeTimeout:
		return http.StatusGatewayTimeout
	case api.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError answers with the protocol's error body; status 0 derives it
// from the code.
func writeError(w http.ResponseWriter, err error, status int) {
	var pe *api.Error
	switch {
	case errors.Is(err, errUnauthorized):
		pe = &api.Error{Code: api.CodeUnauthorized, Message: err.Error()}
		status = http.StatusUnauthorized
		w.Header().Set("WWW-Authenticate", `Basic realm="sessionlog"`)
	case errors.As(err, &pe):
	case errors.Is(err, ErrClosed):
		pe = &api.Error{Code: api.CodeUnavailable, Message: err.Error()}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, nats.ErrConnectionClosed):
		// Given up while the request was under way: its outcome is
		// unknown, and timeout is the code clients resend on, with the
		// same ids, when a request is safe to send again.
		pe = &api.Error{Code: api.CodeTimeout, Message: "no answer (the outcome is unknown; a request with its ids may be sent again): " + err.Error()}
	default:
		pe = &api.Error{Code: api.CodeInternal, Message: err.Error()}
	}
	if status == 0 {
		status = statusOf(pe.Code)
	}
	if pe.RetryAfterMs > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt((pe.RetryAfterMs+999)/1000, 10))
	}
	// The cause of an internal error, or transport text, goes to the
	// node's log (slog's default, as the service's), the client gets a
	// request id for it.
	public := service.Public(pe, err, nil, "http")
	b, _ := json.Marshal(api.ErrorReply{Error: public})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
