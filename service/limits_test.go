package service_test

import (
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/service"
)

// Bad input of every kind gets its code and names the field; nothing is
// stored by a refused request.
func TestBadRequests(t *testing.T) {
	f := start(t, func(c *service.Config) {
		c.Limits.MaxRequestBytes, c.Limits.MaxEntryBytes, c.Limits.MaxEntries, c.Limits.MaxPage = 8<<10, 2<<10, 3, 10
	})
	f.call(t, api.OpCreate, api.CreateRequest{ID: "bad"}, nil)
	var before api.SessionReply
	f.call(t, api.OpOpen, api.SessionRequest{Session: "bad"}, &before)
	big := strings.Repeat("x", 3<<10)
	tests := []struct {
		name      string
		op        string
		body      string
		wantCode  api.Code
		wantField string
	}{
		{name: "malformed JSON", op: api.OpOpen, body: `{"session":`, wantCode: api.CodeBadRequest, wantField: "/session"},
		{name: "not an object", op: api.OpOpen, body: `[1]`, wantCode: api.CodeBadRequest},
		{name: "trailing data", op: api.OpOpen, body: `{"session":"bad"} {}`, wantCode: api.CodeBadRequest},
		{name: "unknown field", op: api.OpOpen, body: `{"session":"bad","sesion":"x"}`, wantCode: api.CodeBadRequest, wantField: "/sesion"},
		{name: "duplicate field", op: api.OpOpen, body: `{"session":"bad","session":"bad"}`, wantCode: api.CodeBadRequest, wantField: "/session"},
		{name: "wrong type", op: api.OpOpen, body: `{"session":7}`, wantCode: api.CodeBadRequest, wantField: "/session"},
		{name: "negative sequence", op: api.OpAppend, body: `{"session":"bad","entries":[` + userHi + `],"ifSequence":-1}`, wantCode: api.CodeBadRequest, wantField: "/ifSequence"},
		{name: "missing session", op: api.OpTree, body: `{}`, wantCode: api.CodeInvalidSessionID, wantField: "/session"},
		{name: "session id with a dot", op: api.OpOpen, body: `{"session":"a.b"}`, wantCode: api.CodeInvalidSessionID, wantField: "/session"},
		{name: "session id wildcard", op: api.OpDelete, body: `{"session":">"}`, wantCode: api.CodeInvalidSessionID, wantField: "/session"},
		{name: "create id with a space", op: api.OpCreate, body: `{"id":"a b"}`, wantCode: api.CodeInvalidSessionID, wantField: "/id"},
		{name: "metadata not an object", op: api.OpCreate, body: `{"id":"m","metadata":[1]}`, wantCode: api.CodeBadRequest, wantField: "/metadata"},
		{name: "no entries", op: api.OpAppend, body: `{"session":"bad","entries":[]}`, wantCode: api.CodeBadRequest, wantField: "/entries"},
		{name: "too many entries", op: api.OpAppend, body: `{"session":"bad","entries":[` + strings.Repeat(userHi+",", 3) + userHi + `]}`, wantCode: api.CodeTooLarge, wantField: "/entries"},
		{name: "entry too large", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"message","message":{"role":"user","content":"` + big + `"}}]}`, wantCode: api.CodeTooLarge, wantField: "/entries/0"},
		{name: "request too large", op: api.OpAppend, body: `{"session":"bad","entries":["` + strings.Repeat(big, 3) + `"]}`, wantCode: api.CodeTooLarge},
		{name: "entry unknown member beyond a float64", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"message","colour":1e400,"message":{"role":"user","content":"x","timestamp":1}}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/colour"},
		{name: "pi 1.6 member of the wrong kind", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m","stopReason":"stop","durationMs":"slow","timestamp":1}}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/message/durationMs"},
		{name: "assistant message that says not who answered", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"message","message":{"role":"assistant","content":[],"timestamp":1}}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/message/provider"},
		{name: "entry member of the wrong type", op: api.OpAppend, body: `{"session":"bad","entries":[` + userHi + `,{"type":"message","message":{"role":"user","content":"x","timestamp":"now"}}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/1/message/timestamp"},
		{name: "entry member nested past the bound", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"message","message":{"role":"user","content":"x","timestamp":1},"deep":` + strings.Repeat("[", 513) + strings.Repeat("]", 513) + `}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/deep"},
		{name: "entry of a type that is no name", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"mys.tery"}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/type"},
		{name: "context edit of an entry not above it", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"context_edit","targetId":"nosuch","replacement":null}]}`, wantCode: api.CodeInvalidTarget},
		{name: "context edit without replacement", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"context_edit","targetId":"e0001"}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/replacement"},
		{name: "entry not valid for its type", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"model_change"}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0"},
		{name: "entry that is a header", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"session","id":"x"}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0"},
		{name: "bad entry id", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"message","id":"a b","message":{"role":"user","content":"x"}}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/id"},
		{name: "missing parent", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"message","parentId":"ghost","message":{"role":"user","content":"x"}}]}`, wantCode: api.CodeParentNotFound, wantField: "/entries/0/parentId"},
		{name: "move to a missing entry", op: api.OpMove, body: `{"session":"bad","target":"ghost"}`, wantCode: api.CodeInvalidTarget, wantField: "/target"},
		{name: "details without a summary", op: api.OpMove, body: `{"session":"bad","target":"","details":{}}`, wantCode: api.CodeBadRequest, wantField: "/details"},
		{name: "label of a missing entry", op: api.OpLabel, body: `{"session":"bad","target":"ghost","label":"x"}`, wantCode: api.CodeInvalidTarget, wantField: "/target"},
		{name: "context at a missing entry", op: api.OpContext, body: `{"session":"bad","at":"ghost"}`, wantCode: api.CodeEntryNotFound},
		{name: "fork at and before", op: api.OpFork, body: `{"session":"bad","at":"a","before":"b"}`, wantCode: api.CodeBadRequest, wantField: "/before"},
		{name: "list page too large", op: api.OpList, body: `{"limit":11}`, wantCode: api.CodeTooLarge, wantField: "/limit"},
		{name: "list page negative", op: api.OpList, body: `{"limit":-1}`, wantCode: api.CodeTooLarge, wantField: "/limit"},
		{name: "forged cursor", op: api.OpList, body: `{"cursor":"nonsense"}`, wantCode: api.CodeBadRequest, wantField: "/cursor"},
		{name: "entries page too large", op: api.OpEntries, body: `{"session":"bad","limit":1000}`, wantCode: api.CodeTooLarge, wantField: "/limit"},
		{name: "wait without a sequence", op: api.OpWait, body: `{"session":"bad"}`, wantCode: api.CodeBadRequest, wantField: "/sequence"},
		// Values that once made a session unreadable: refused, naming the member.
		{name: "message timestamp 1.5", op: api.OpAppend, body: msgWith(`"timestamp":1.5`), wantCode: api.CodeInvalidEntry, wantField: "/entries/0/message/timestamp"},
		{name: "message timestamp 1e400", op: api.OpAppend, body: msgWith(`"timestamp":1e400`), wantCode: api.CodeInvalidEntry, wantField: "/entries/0/message/timestamp"},
		{name: "message timestamp 2^64", op: api.OpAppend, body: msgWith(`"timestamp":18446744073709551616`), wantCode: api.CodeInvalidEntry, wantField: "/entries/0/message/timestamp"},
		{name: "message timestamp negative", op: api.OpAppend, body: msgWith(`"timestamp":-5`), wantCode: api.CodeInvalidEntry, wantField: "/entries/0/message/timestamp"},
		{name: "entry timestamp not a time", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"message","timestamp":"tuesday","message":{"role":"user","content":"x"}}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/timestamp"},
		{name: "unknown role", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"message","message":{"role":"wizard","content":"x"}}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/message/role"},
		{name: "compaction without firstKeptEntryId", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"compaction","summary":"s","tokensBefore":1}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/firstKeptEntryId"},
		{name: "usage tokens fractional", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"message","message":{"role":"assistant","content":[],"usage":{"input":0.5}}}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/message/usage/input"},
		{name: "active tools not names", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"active_tools_change","activeTools":[1]}]}`, wantCode: api.CodeInvalidEntry, wantField: "/entries/0/activeTools"},
		{name: "duplicate ids in one batch", op: api.OpAppend, body: `{"session":"bad","entries":[{"type":"message","id":"d","message":{"role":"user","content":"x"}},{"type":"message","id":"d","message":{"role":"user","content":"y"}}]}`, wantCode: api.CodeDuplicateID},
		{name: "unknown session", op: api.OpStats, body: `{"session":"nobody"}`, wantCode: api.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.raw(tt.op, tt.body)
			var pe *api.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a service error", err)
			}
			if pe.Code != tt.wantCode || pe.Field != tt.wantField {
				t.Fatalf("got code %s field %q (%s), want %s %q", pe.Code, pe.Field, pe.Message, tt.wantCode, tt.wantField)
			}
			if pe.Message == "" || doubledArticle.MatchString(pe.Message) {
				t.Fatalf("no message, or a garbled one: %q", pe.Message)
			}
		})
	}
	var after api.SessionReply
	f.call(t, api.OpOpen, api.SessionRequest{Session: "bad"}, &after)
	if after.Sequence != before.Sequence || after.Session.Entries != 0 {
		t.Fatalf("refused requests stored something: %+v", after)
	}
}

// Past its burst a client is refused with a time to retry after; the
// service keeps serving other clients.
func TestRateLimit(t *testing.T) {
	f := start(t, func(c *service.Config) { c.Limits.Rate, c.Limits.Burst = 2, 5 })
	limited := 0
	for range 20 {
		err := f.raw(api.OpList, `{}`)
		var pe *api.Error
		switch {
		case err == nil:
		case errors.As(err, &pe) && pe.Code == api.CodeRateLimited && pe.RetryAfterMs > 0:
			limited++
		default:
			t.Fatal(err)
		}
	}
	if limited < 10 {
		t.Fatalf("%d of 20 requests limited; want at least 15 past a burst of 5 at 2/s (some slack)", limited)
	}
	other := newClient(t, f.cfg.Subject)
	if _, err := other.Raw(t.Context(), api.OpList, []byte(`{}`)); err != nil {
		t.Fatalf("another client: %v", err)
	}
}

// A tenant writing more bytes a second than its write rate is refused
// with a time to retry after, past its burst; reads go on meanwhile.
func TestTenantWriteRate(t *testing.T) {
	f := start(t, func(c *service.Config) {
		c.Limits.TenantWriteBytes, c.Limits.TenantWriteBurst = 200<<10, 1<<20
	})
	f.call(t, api.OpCreate, api.CreateRequest{ID: "w"}, nil)
	body := `{"session":"w","entries":[{"type":"message","message":{"role":"user","content":"` + strings.Repeat("x", 300<<10) + `"}}]}`
	stored, limited := 0, 0
	for range 8 {
		err := f.raw(api.OpAppend, body)
		var pe *api.Error
		switch {
		case err == nil:
			stored++
		case errors.As(err, &pe) && pe.Code == api.CodeRateLimited && pe.RetryAfterMs > 0 && strings.Contains(pe.Message, "bytes a second"):
			limited++
		default:
			t.Fatal(err)
		}
	}
	// A burst of 1 MiB takes three 300 KB appends, and 200 KB/s a fourth
	// within the second or so these take.
	if stored < 3 || stored > 5 || limited == 0 {
		t.Fatalf("%d appends stored, %d refused; want the burst's 3 (4 or 5 with the refill) and the rest refused", stored, limited)
	}
	if err := f.raw(api.OpOpen, `{"session":"w"}`); err != nil {
		t.Fatalf("a read while writes are refused: %v", err)
	}
}

// doubledArticle finds "a a string" and the like in messages.
var doubledArticle = regexp.MustCompile(`\b(a|an) (a|an) `)

// msgWith is an append of one user message with extra message members.
func msgWith(members string) string {
	return `{"session":"bad","entries":[{"type":"message","message":{"role":"user","content":"x",` + members + `}}]}`
}

// A node that cannot serve (Config.Ready fails: cut off from its cluster)
// answers every request "unavailable" at once, naming why, and serves
// again as soon as it can.
func TestNotReadyNodeAnswersUnavailable(t *testing.T) {
	var cut atomic.Bool
	f := start(t, func(c *service.Config) {
		c.Ready = func() error {
			if cut.Load() {
				return errors.New("routes to 0 other node(s)")
			}
			return nil
		}
	})
	f.call(t, api.OpCreate, api.CreateRequest{ID: "s"}, nil)
	cut.Store(true)
	for _, op := range []string{api.OpOpen, api.OpAppend, api.OpList} {
		start := time.Now()
		err := f.callErr(op, api.SessionRequest{Session: "s"})
		var se *api.Error
		if !errors.As(err, &se) || se.Code != api.CodeUnavailable || !strings.Contains(se.Message, "routes to 0") {
			t.Fatalf("%s on a node that cannot serve: %v", op, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s took %v to be refused", op, took)
		}
	}
	cut.Store(false)
	f.call(t, api.OpOpen, api.SessionRequest{Session: "s"}, nil)
}
