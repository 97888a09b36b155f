package service_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/service"
)

// A fork is charged what it copies against the tenant's write rate, as
// appends are: the tenant's writes after a large fork wait until it is
// paid (six forks once copied 430 MB in 37 s with no 429: only the
// request's few bytes were charged; issue 68, item 4).
func TestForkIsChargedWhatItCopies(t *testing.T) {
	f := start(t, func(c *service.Config) {
		c.Limits.TenantWriteBytes, c.Limits.TenantWriteBurst = 1<<20, 2<<20
	})
	f.call(t, api.OpCreate, api.CreateRequest{ID: "big"}, nil)
	// 6 MiB, written slowly enough for the write rate, in entries under
	// the offload threshold (content stored apart is shared by a fork,
	// not copied: only what is copied is charged).
	chunk := strings.Repeat("x", 100<<10)
	for i := range 60 {
		body := fmt.Sprintf(`{"session":"big","entries":[{"type":"message","message":{"role":"user","content":"%d %s"}}]}`, i, chunk)
		for {
			err := f.raw(api.OpAppend, body)
			var pe *api.Error
			if errors.As(err, &pe) && pe.Code == api.CodeRateLimited {
				sleepMs(pe.RetryAfterMs)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	// Let the burst fill again: what follows is the fork's doing.
	sleepMs(2100)
	var r api.SessionReply
	f.call(t, api.OpFork, api.ForkRequest{Session: "big", ID: "copy"}, &r)
	if r.Copied != 60 {
		t.Fatalf("the fork copied %d entries, want 60", r.Copied)
	}
	err := f.raw(api.OpAppend, `{"session":"copy","entries":[{"type":"message","message":{"role":"user","content":"after"}}]}`)
	var pe *api.Error
	if !errors.As(err, &pe) || pe.Code != api.CodeRateLimited || pe.RetryAfterMs < 2000 {
		t.Fatalf("a write right after a 6 MiB fork at 1 MiB/s: %v, want rate_limited for seconds", err)
	}
	err = f.raw(api.OpFork, `{"session":"big","id":"copy2"}`)
	if !errors.As(err, &pe) || pe.Code != api.CodeRateLimited {
		t.Fatalf("a second fork while the first is unpaid: %v, want rate_limited", err)
	}
	// Reads go on meanwhile, and the copy is whole.
	var tr api.TreeReply
	f.call(t, api.OpTree, api.TreeRequest{Session: "copy"}, &tr)
	if tr.Total != 60 {
		t.Fatalf("the copy holds %d entries, want 60", tr.Total)
	}
}

func sleepMs(ms int64) { time.Sleep(time.Duration(ms) * time.Millisecond) }
