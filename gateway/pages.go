package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentcore/sessionlog/api"
)

// The service pages a context or a tree that outgrows one NATS message.
// HTTP has no such limit, so when the caller names no page (no offset)
// the gateway fetches the pages and answers with the whole, up to
// maxAssembled bytes; a larger one is refused with too_large, and the
// caller reads it page by page (?offset=, following next).

// pagedItems names, per operation, the arrays that pages split.
var pagedItems = map[string][]string{
	api.OpContext: {"messages", "sources"},
	api.OpTree:    {"nodes"},
}

// maxAssembled bounds a reply the gateway puts together; assembleWait
// is how long one waits for its turn.
const (
	maxAssembled = 64 << 20
	assembleWait = 2 * time.Second
)

// assemble asks for req's pages from offset 0 and joins them. Pages must
// share one sequence: if the session moved on meanwhile, it starts over.
//
// At most Config.MaxAssembling replies are put together at once on the
// node (each up to maxAssembled bytes in memory), at most
// MaxAssemblingPerTenant of one tenant's and MaxAssemblingPerUser of one
// user's, so that one tenant's large reads never take every turn (shares):
// past them a caller waits a moment, then is refused rate_limited, and can
// read in pages meanwhile.
func (g *Gateway) assemble(ctx context.Context, u *userConn, op string, req map[string]any) ([]byte, error) {
	tenant := g.tenantOf(u)
	release, refused, err := g.assembling.acquire(ctx, tenant, tenant+"/"+u.name, assembleWait)
	switch {
	case err != nil:
		return nil, err
	case refused != nil && refused.own != "":
		return nil, &api.Error{Code: api.CodeRateLimited, RetryAfterMs: assembleWait.Milliseconds(),
			Message: fmt.Sprintf("%s large replies already being put together take its share: try again, or read the %s in pages with ?offset=", refused.own, op)}
	case refused != nil:
		// Nothing of who holds the turns: another tenant's reads are not
		// this caller's business.
		return nil, &api.Error{Code: api.CodeRateLimited, RetryAfterMs: assembleWait.Milliseconds(),
			Message: fmt.Sprintf("no turn to put a large reply together came within %v: try again, or read the %s in pages with ?offset=", assembleWait, op)}
	}
	defer release()
	for range 3 {
		out, moved, err := g.pages(ctx, u, op, req)
		if err != nil || !moved {
			return out, err
		}
	}
	return nil, &api.Error{Code: api.CodeConflict, Message: "the session kept changing while its pages were read: read them with ?offset="}
}

func (g *Gateway) pages(ctx context.Context, u *userConn, op string, req map[string]any) (out []byte, moved bool, err error) {
	var first map[string]jsontext.Value
	items := map[string][]jsontext.Value{}
	size, offset := 0, 0
	for {
		req["offset"] = offset
		body, err := json.Marshal(req)
		if err != nil {
			return nil, false, err
		}
		raw, err := u.c.Raw(ctx, op, body)
		if err != nil {
			return nil, false, err
		}
		if size += len(raw); size > maxAssembled {
			return nil, false, &api.Error{Code: api.CodeTooLarge, Message: fmt.Sprintf("the %s is over %d bytes: read it in pages with ?offset= (and next)", op, maxAssembled)}
		}
		var page map[string]jsontext.Value
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, false, fmt.Errorf("gateway: %s page: %w", op, err)
		}
		if first == nil {
			first = page
		} else if string(page["sequence"]) != string(first["sequence"]) {
			return nil, true, nil
		}
		for _, k := range pagedItems[op] {
			var part []jsontext.Value
			if err := json.Unmarshal(page[k], &part); err != nil {
				return nil, false, fmt.Errorf("gateway: %s page %s: %w", op, k, err)
			}
			items[k] = append(items[k], part...)
		}
		var next int
		if n, ok := page["next"]; ok {
			if err := json.Unmarshal(n, &next); err != nil {
				return nil, false, err
			}
		}
		if next <= offset {
			break
		}
		offset = next
	}
	delete(first, "next")
	delete(first, "offset")
	for k, v := range items {
		if v == nil {
			v = []jsontext.Value{}
		}
		if first[k], err = json.Marshal(v); err != nil {
			return nil, false, err
		}
	}
	out, err = json.Marshal(first, json.Deterministic(true))
	return out, false, err
}
