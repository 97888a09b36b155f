package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// Client calls a sessionlog service over NATS. Errors the service returns
// are *Error (errors.Is works with the session package's sentinels).
type Client struct {
	nc      *nats.Conn
	subject string
	prop    propagation.TextMapPropagator
}

// ClientOption configures NewClient.
type ClientOption func(*Client)

// WithPropagator sets the propagator requests carry the caller's trace
// with (default: the global one).
func WithPropagator(p propagation.TextMapPropagator) ClientOption {
	return func(c *Client) { c.prop = p }
}

// NewClient calls the service at subject (Config.Subject, sessionlog.v1)
// over nc. Requests carry the trace of their context (traceparent).
func NewClient(nc *nats.Conn, subject string, opts ...ClientOption) *Client {
	c := &Client{nc: nc, subject: subject}
	for _, o := range opts {
		o(c)
	}
	if c.prop == nil {
		c.prop = otel.GetTextMapPropagator()
	}
	return c
}

// Call sends req (any JSON-marshalable value) to op and decodes the reply
// into reply (which may be nil).
func (c *Client) Call(ctx context.Context, op string, req, reply any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("sessionlog: %s request: %w", op, err)
	}
	out, err := c.Raw(ctx, op, body)
	if err != nil {
		return err
	}
	if reply == nil {
		return nil
	}
	if err := json.Unmarshal(out, reply); err != nil {
		return fmt.Errorf("sessionlog: %s reply: %w", op, err)
	}
	return nil
}

// Raw sends a request body to op and returns the reply body, or the
// service's *Error.
func (c *Client) Raw(ctx context.Context, op string, body []byte) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	req := nats.NewMsg(c.subject + "." + op)
	req.Data = body
	c.prop.Inject(ctx, headerCarrier(req.Header))
	msg, err := c.nc.RequestMsgWithContext(ctx, req)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, &Error{Code: CodeUnavailable, Message: "no sessionlog service answers on " + c.subject + "." + op}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return nil, &Error{Code: CodeTimeout, Message: fmt.Sprintf("no reply to %s: %v", op, err)}
	case err != nil:
		return nil, fmt.Errorf("sessionlog: %s: %w", op, err)
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		var er ErrorReply
		if json.Unmarshal(msg.Data, &er) == nil && er.Error != nil {
			return nil, er.Error
		}
		return nil, &Error{Code: Code(code), Message: msg.Header.Get(micro.ErrorHeader)}
	}
	return msg.Data, nil
}

// headerCarrier reads and writes NATS headers as they are: NATS header
// names are case-sensitive, and W3C's are lowercase (traceparent).
type headerCarrier nats.Header

func (h headerCarrier) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (h headerCarrier) Set(key, value string) { h[key] = []string{value} }

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}
