package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/stream/blobs"
	"github.com/agentcore/sessionlog/stream/live"
)

// No package names, addresses or transport text reach a client: such a
// cause goes to the node's log under a request id the client is given
// (issue 68, item 6: clients read "blobs: not found: <sha>", "live: full:
// nats: nats: API error: code=503 err_code=10077", "write tcp
// 127.0.0.1:38322->…: connection reset by peer").
func TestErrorsTellNoServerWorkings(t *testing.T) {
	apiErr := errors.New("nats: API error: code=503 err_code=10077 description=insufficient resources")
	cases := []struct {
		name   string
		err    error
		code   api.Code
		hidden bool   // told as a request id
		want   string // in what the client reads, when told
	}{
		{"a blob not held", fmt.Errorf("%w: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", blobs.ErrNotFound), api.CodeBlobNotFound, false, "9f86d081"},
		{"a generation's stream full", fmt.Errorf("%w: nats: %w", live.ErrFull, apiErr), api.CodeTooLarge, true, ""},
		{"a reset connection", errors.New("write tcp 127.0.0.1:38322->127.0.0.1:4222: write: connection reset by peer"), api.CodeInternal, true, ""},
		{"an IPv6 peer", errors.New("read tcp [::1]:4222: i/o timeout"), api.CodeInternal, true, ""},
		{"an internal error of no known cause", errors.New("stream: index: unexpected state"), api.CodeInternal, true, ""},
		{"a timeout over lines", fmt.Errorf("%w\nstream: sync big-copy: %w", context.DeadlineExceeded, context.DeadlineExceeded), api.CodeTimeout, false, "sync big-copy"},
		{"an internal error naming packages", fmt.Errorf("session: %w", errors.New("codec: state of entry \"a\"")), api.CodeInternal, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			pe := Public(errorOf(c.err), c.err, slog.New(slog.NewTextHandler(&log, nil)), "append")
			if pe.Code != c.code {
				t.Fatalf("code %s, want %s (%q)", pe.Code, c.code, pe.Message)
			}
			for _, bad := range []string{"blobs:", "live:", "nats:", "stream:", "session:", "err_code", "127.0.0.1", "::1", "connection reset", "i/o timeout"} {
				if strings.Contains(pe.Message, bad) {
					t.Fatalf("the client reads %q: it names %q", pe.Message, bad)
				}
			}
			if !c.hidden {
				if pe.Request != "" || !strings.Contains(pe.Message, c.want) {
					t.Fatalf("the client reads %q (request %q), want the cause told", pe.Message, pe.Request)
				}
				return
			}
			if pe.Request == "" || !strings.Contains(pe.Message, pe.Request) {
				t.Fatalf("no request id to find the cause by: %+v", pe)
			}
			if l := log.String(); !strings.Contains(l, "request="+pe.Request) || !strings.Contains(l, c.err.Error()[:10]) {
				t.Fatalf("the node's log does not hold the cause under its request id:\n%s", l)
			}
			// Relayed (the gateway over the service's reply), it stays as it was told.
			if again := Public(pe, pe, nil, "http"); again.Request != pe.Request || again.Message != pe.Message {
				t.Fatalf("relayed as %+v", again)
			}
		})
	}
}
