package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcore/sessionlog/api"
)

// resourcePrefix is the URI of a session but its id.
const resourcePrefix = "sessionlog://sessions/"

// addResources adds the session resource template: a session's leaf
// context as text.
func (t *tools) addResources(s *mcp.Server) {
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "session", URITemplate: resourcePrefix + "{id}", MIMEType: "text/plain",
		Description: fmt.Sprintf("The context of a session's current branch as readable text (within %d tokens, the oldest messages left out first). Subscribe to be told when the session grows.", t.cfg.DefaultTokens) + dataNote,
	}, t.readResource)
}

func (t *tools) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	id, err := sessionOf(req.Params.URI)
	if err != nil {
		return nil, err
	}
	res, _, err := t.getContext(ctx, nil, ContextInput{Session: id})
	if err != nil {
		var se *api.Error
		if errors.As(err, &se) && se.Code == api.CodeNotFound {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		return nil, toolError(err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: res.Content[0].(*mcp.TextContent).Text}}}, nil
}

// sessionOf is the session id a resource URI names.
func sessionOf(uri string) (string, error) {
	id, ok := strings.CutPrefix(uri, resourcePrefix)
	if !ok {
		return "", fmt.Errorf("%q is not a session's URI (%s{id})", clip(uri), resourcePrefix)
	}
	return id, checkSession(id)
}

// watcher follows the sessions clients subscribed to, one goroutine a
// session however many subscribed, and says when each grows. It owns its
// goroutines: close stops them and waits.
type watcher struct {
	svc    Service
	notify func(ctx context.Context, uri string)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	subs   map[string]*watch
}

type watch struct {
	refs   int
	cancel context.CancelFunc
}

// maxWatches bounds the sessions followed at once.
const maxWatches = 256

func newWatcher(svc Service) *watcher {
	w := &watcher{svc: svc, subs: map[string]*watch{}}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w
}

func (w *watcher) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	id, err := sessionOf(uri)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.subs[uri]; s != nil {
		s.refs++
		return nil
	}
	if len(w.subs) >= maxWatches {
		return fmt.Errorf("this server follows %d sessions already, the most it does", maxWatches)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.subs[uri] = &watch{refs: 1, cancel: cancel}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.follow(ctx, id, uri)
	}()
	return nil
}

func (w *watcher) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.subs[req.Params.URI]; s != nil {
		if s.refs--; s.refs == 0 {
			s.cancel()
			delete(w.subs, req.Params.URI)
		}
	}
	return nil
}

// follow waits for the session to pass the sequence it was at, says so,
// and waits again, until ctx ends.
func (w *watcher) follow(ctx context.Context, id, uri string) {
	var seq uint64
	var open api.SessionReply
	if err := w.svc.Call(ctx, api.OpOpen, api.SessionRequest{Session: id}, &open); err == nil {
		seq = open.Sequence
	}
	for ctx.Err() == nil {
		var reply api.WaitReply
		err := w.svc.Call(ctx, api.OpWait, api.WaitRequest{Session: id, Sequence: seq + 1, TimeoutMs: 20_000}, &reply)
		var se *api.Error
		switch {
		case err == nil && reply.Sequence > seq:
			seq = reply.Sequence
			w.notify(ctx, uri)
		case errors.As(err, &se) && se.Code == api.CodeTimeout:
		case err != nil:
			select { // a session not made yet, a service restarting: later
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (w *watcher) close() {
	w.cancel()
	w.wg.Wait()
}
