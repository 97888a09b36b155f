package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/stream"
	"github.com/agentcore/sessionlog/stream/blobs"
	"github.com/agentcore/sessionlog/stream/live"
	"github.com/agentcore/sessionlog/telemetry"
)

var (
	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("service: invalid config")
	// ErrClosed is returned by Start after Close and by a closed Client.
	ErrClosed = errors.New("service: closed")
)

// Service is a running micro service over one stream backend.
//
// Its three locks are leaves, each guarding its own fields and never held
// while another is taken or across a request: resumeMu the edges' resume
// times, waitMu the waits in flight, mu the closing (closed and wg.Add).
type Service struct {
	copies chan struct{} // the fork under way (one at a time)
	logger *slog.Logger  // hears the causes clients are not told (public.go)
	cfg    Config
	b      *stream.Backend
	// edges are the tenant's edge domains, the link op's (Config.
	// EdgeDomains until SetEdgeDomains).
	edges atomic.Pointer[[]string]
	// resumed is when each edge's Resume last restarted its sourcing.
	resumeMu sync.Mutex
	resumed  map[string]time.Time
	uploads  *blobs.Uploads
	live     *live.Generations
	// staged bounds the bytes of staged appends held at once.
	staged *semaphore.Weighted
	nc     *nats.Conn
	svc    micro.Service
	cache  *cache
	lim    *limiter
	sem    chan struct{}
	// waits holds a token per wait in flight (MaxWaits), waitsBy counts
	// them per client; both under waitMu.
	waits   chan struct{}
	waitMu  sync.Mutex
	waitsBy map[string]int
	tel     *telemetry.T
	// gauges observes the cache size.
	gauges metric.Registration
	// refusedReplies counts requests whose reply subject was refused.
	refusedReplies atomic.Int64
	quota          *consumerQuota
	answered       opStats
	// staleReads, set only by tests (export_test.go), skips the freshness
	// check of reads: the stale path the linearizability test must catch.
	staleReads atomic.Bool

	ctx      context.Context
	cancel   context.CancelFunc
	stopping chan struct{} // closed by Close: waits give up at once
	// searches holds a token per search running (Config.MaxSearches).
	searches chan struct{}
	mu       sync.Mutex // guards closed and wg.Add against Close
	closed   bool
	wg       sync.WaitGroup
}

type opFunc func(ctx context.Context, data []byte) (any, error)

// Start serves the sessions of b on nc (b's connection, or another one in
// the same account) until Close.
func Start(ctx context.Context, nc *nats.Conn, b *stream.Backend, cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	closeFailed := func(id string, err error) {
		logger.Warn("sessionlog: closing a session out of the service's cache failed; its listing may be stale until its next write", "session", id, "stream", b.Config().Stream, "error", err)
	}
	s := &Service{
		cfg: cfg, b: b, nc: nc, uploads: b.Uploads(), live: b.Generations(), staged: semaphore.NewWeighted(cfg.Limits.MaxStagedBytes),
		cache: newCache(b, cfg.MaxOpenSessions, cfg.MaxCachedBytes, closeFailed),
		lim:   newLimiter(cfg.Limits),
		sem:   make(chan struct{}, cfg.MaxInFlight),
		waits: make(chan struct{}, cfg.MaxWaits), waitsBy: map[string]int{},
		searches: make(chan struct{}, max(1, cfg.MaxSearches)),
		copies:   make(chan struct{}, 1),
		tel:      b.Telemetry(),
		ctx:      sctx, cancel: cancel, stopping: make(chan struct{}),
		logger: logger,
	}
	meta := map[string]string{"stream": b.Config().Stream, "subject": cfg.Subject}
	if cfg.Tenant != "" {
		meta["tenant"] = cfg.Tenant
	}
	var err error
	s.gauges, err = s.tel.Meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(s.tel.CacheSize, int64(s.cache.size()), metric.WithAttributes(telemetry.CacheKey.String("service"), telemetry.TenantKey.String(cfg.Tenant)))
		return nil
	}, s.tel.CacheSize)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("service: metrics: %w", err)
	}
	svc, err := micro.AddService(nc, micro.Config{
		Name: cfg.Name, Version: cfg.Version, QueueGroup: cfg.QueueGroup, Metadata: meta,
		Description:  "sessionlog: LLM-agent sessions as trees of entries in JetStream",
		StatsHandler: s.answered.of,
	})
	if err != nil {
		cancel()
		s.gauges.Unregister()
		return nil, fmt.Errorf("service: %w", err)
	}
	s.svc = svc
	g := svc.AddGroup(cfg.Subject, micro.WithGroupQueueGroup(cfg.QueueGroup))
	for op, fn := range s.ops() {
		if err := g.AddEndpoint(op, s.handler(op, fn)); err != nil {
			svc.Stop()
			cancel()
			return nil, fmt.Errorf("service: endpoint %s: %w", op, err)
		}
	}
	if err := s.startQuota(); err != nil {
		svc.Stop()
		cancel()
		return nil, err
	}
	// The server has the endpoints' subscriptions once this returns: a
	// client asking right after Start is answered, not told that no
	// service is there.
	if err := nc.FlushTimeout(cfg.RequestTimeout); err != nil {
		svc.Stop()
		cancel()
		return nil, fmt.Errorf("service: %w", err)
	}
	s.wg.Add(1)
	go s.expireIdle()
	return s, nil
}

// expireIdle closes idle sessions until the service stops.
func (s *Service) expireIdle() {
	defer s.wg.Done()
	t := time.NewTicker(max(s.cfg.CacheIdle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.stopping:
			return
		case <-t.C:
			s.cache.expire(s.ctx, s.cfg.CacheIdle)
		}
	}
}

// Info returns what micro announces for this instance.
func (s *Service) Info() micro.Info { return s.svc.Info() }

// Stats returns micro's request and error counts per endpoint.
func (s *Service) Stats() micro.Stats { return s.svc.Stats() }

// handler checks size and rate, then runs fn on its own goroutine (micro
// calls each endpoint's handler in turn; a wait must not hold up others).
func (s *Service) handler(op string, fn opFunc) micro.Handler {
	return micro.HandlerFunc(func(req micro.Request) {
		if !s.replyAllowed(req.Reply()) {
			// Answering would publish where the client said: perhaps a
			// stored subject. Nothing is done for such a request.
			s.refusedReplies.Add(1)
			return
		}
		if n := len(req.Data()); n > s.cfg.Limits.MaxRequestBytes {
			s.respondError(req, op, &api.Error{Code: api.CodeTooLarge, Message: fmt.Sprintf("request of %d bytes is over the limit of %d", n, s.cfg.Limits.MaxRequestBytes)})
			return
		}
		if wait, ok := s.lim.allow(clientOf(req.Reply())); !ok {
			s.respondError(req, op, &api.Error{Code: api.CodeRateLimited, Message: "too many requests", RetryAfterMs: max(1, wait.Milliseconds())})
			return
		}
		if writes[op] {
			if wait, ok := s.lim.allowBytes(len(req.Data())); !ok {
				s.respondError(req, op, &api.Error{Code: api.CodeRateLimited, Message: fmt.Sprintf("the tenant writes more than %.0f bytes a second", s.cfg.Limits.TenantWriteBytes), RetryAfterMs: max(1, wait.Milliseconds())})
				return
			}
		}
		if s.cfg.Ready != nil {
			if err := s.cfg.Ready(); err != nil {
				s.respondError(req, op, &api.Error{Code: api.CodeUnavailable, Message: "this node cannot serve now: " + err.Error()})
				return
			}
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			s.respondError(req, op, &api.Error{Code: api.CodeUnavailable, Message: "service is stopping"})
			return
		}
		s.wg.Add(1)
		s.mu.Unlock()
		// Waits hold their slot for up to MaxWait: they have slots of
		// their own, and past those are refused rather than queued, so
		// they never starve other requests.
		sem, client := s.sem, clientOf(req.Reply())
		if op == api.OpWait {
			if err := s.takeWait(client); err != nil {
				s.wg.Done()
				s.respondError(req, op, err)
				return
			}
			sem = nil
		} else {
			select {
			case s.sem <- struct{}{}:
			case <-s.ctx.Done():
				s.wg.Done()
				s.respondError(req, op, &api.Error{Code: api.CodeUnavailable, Message: "service is stopping"})
				return
			}
		}
		go func() {
			defer s.wg.Done()
			defer func() {
				if sem != nil {
					<-sem
				} else {
					s.releaseWait(client)
				}
			}()
			timeout := s.cfg.RequestTimeout
			switch op {
			case api.OpWait:
				timeout += s.cfg.MaxWait
			case api.OpFork:
				// A copy of the whole branch: twice a request's time (the
				// gateway waits 45 s), some 1.5 GB at the rate measured.
				timeout *= 2
			}
			ctx, cancel := context.WithTimeout(s.ctx, timeout)
			defer cancel()
			ctx, finish := s.trace(ctx, op, req)
			reply, err := fn(ctx, req.Data())
			var body []byte
			switch r := reply.(type) {
			case encoded:
				body = r
			default:
				if err == nil {
					body, err = json.Marshal(reply)
				}
			}
			if err == nil && int64(len(body)) > s.nc.MaxPayload() {
				// Never a silent drop: the paged reads stay within it,
				// anything else too large is refused, saying so.
				err = &api.Error{Code: api.CodeTooLarge, Message: fmt.Sprintf("the reply is %d bytes, over the server's max payload of %d", len(body), s.nc.MaxPayload())}
			}
			if err != nil {
				pe := errorOf(err)
				if se := storageError(err, s.nc.ConnectedServerName(), s.cfg.OutOfSpace); se != nil {
					pe = se
				}
				pe = Public(pe, err, s.logger, op)
				finish(pe)
				s.answered.note(op, pe)
				s.replyAsync(req, errorBody(pe), errorHeaders(pe))
				return
			}
			finish(nil)
			s.answered.note(op, nil)
			s.replyAsync(req, body, nil)
		}()
	})
}

// takeWait takes a wait slot: one of MaxWaits, and one of the client's
// MaxWaitsPerClient, so that one client cannot hold every wait.
func (s *Service) takeWait(client string) *api.Error {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	switch {
	case s.waitsBy[client] >= s.cfg.MaxWaitsPerClient:
		return &api.Error{Code: api.CodeRateLimited, Message: fmt.Sprintf("%d waits in flight for this client: the limit", s.waitsBy[client]), RetryAfterMs: 1000}
	case len(s.waits) >= cap(s.waits):
		return &api.Error{Code: api.CodeRateLimited, Message: fmt.Sprintf("%d waits in flight: the limit", cap(s.waits)), RetryAfterMs: 1000}
	}
	s.waits <- struct{}{}
	s.waitsBy[client]++
	return nil
}

func (s *Service) releaseWait(client string) {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	<-s.waits
	if s.waitsBy[client]--; s.waitsBy[client] <= 0 {
		delete(s.waitsBy, client)
	}
}

// replyAllowed says whether a reply may be published to subject: under a
// reply prefix, and a plain subject (no wildcard, no empty token).
func (s *Service) replyAllowed(subject string) bool {
	for _, p := range s.cfg.ReplyPrefixes {
		if strings.HasPrefix(subject, p) && len(subject) > len(p) {
			for _, tok := range strings.Split(subject[len(p):], ".") {
				if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
					return false
				}
			}
			return true
		}
	}
	return false
}

// trace starts the server span of a request, continuing the caller's
// trace when the request carries one (traceparent header); finish ends it
// and records the request's duration by op and code.
func (s *Service) trace(ctx context.Context, op string, req micro.Request) (context.Context, func(*api.Error)) {
	start := time.Now()
	ctx = s.tel.Extract(ctx, nats.Header(req.Headers()))
	ctx, span := s.tel.Tracer.Start(ctx, s.cfg.Subject+" "+op, trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(telemetry.Messaging(telemetry.OpProcess, req.Subject(), "")...)
		span.SetAttributes(telemetry.OpKey.String(op), telemetry.StreamKey.String(s.b.Config().Stream))
		if s.cfg.Tenant != "" {
			span.SetAttributes(telemetry.TenantKey.String(s.cfg.Tenant))
		}
	}
	return ctx, func(e *api.Error) {
		code := "ok"
		if e != nil {
			code = string(e.Code)
			span.SetAttributes(telemetry.CodeKey.String(code))
			if e.Code == api.CodeInternal || e.Code == api.CodeUnavailable || e.Code == api.CodeTimeout {
				span.SetStatus(codes.Error, e.Message)
			}
		}
		s.tel.RequestDuration.Record(ctx, telemetry.Seconds(start), metric.WithAttributes(telemetry.OpKey.String(op), telemetry.CodeKey.String(code)))
		span.End()
	}
}

// respondError answers from the micro handler itself.
func (s *Service) respondError(req micro.Request, op string, e *api.Error) {
	e = Public(e, nil, s.logger, op)
	_ = req.Error(string(e.Code), e.Message, errorBody(e))
}

// replyAsync answers from a goroutine of ours: on the connection, not
// through req, whose fields micro reads once the handler has returned.
// A requester that gave up is not our error.
func (s *Service) replyAsync(req micro.Request, body []byte, h nats.Header) {
	_ = s.nc.PublishMsg(&nats.Msg{Subject: req.Reply(), Data: body, Header: h})
}

func errorBody(e *api.Error) []byte {
	body, _ := json.Marshal(api.ErrorReply{Error: e})
	return body
}

// errorHeaders are micro's error headers, which micro clients read.
func errorHeaders(e *api.Error) nats.Header {
	return nats.Header{micro.ErrorHeader: {e.Message}, micro.ErrorCodeHeader: {string(e.Code)}}
}

// Close stops taking requests, waits for those in flight, and closes the
// sessions held open. It is idempotent.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stopping)
	_ = s.gauges.Unregister()
	if s.quota != nil {
		s.quota.stop()
	}
	err := s.svc.Stop()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.cancel() // abandon waits and slow requests
		<-done
	}
	s.cancel()
	return errors.Join(err, s.cache.close(ctx))
}
