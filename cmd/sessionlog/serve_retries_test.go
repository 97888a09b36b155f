package main

import (
	"testing"
	"time"
)

// A refusal that lasts is asked about less and less often, up to once a
// minute, and said when new, when it changes and once a minute — not at
// every try; after a success the next refusal is said at once.
func TestRetriesBackOff(t *testing.T) {
	var r retries
	now := time.Unix(0, 0)
	var waits []time.Duration
	said := 0
	for range 40 {
		if !r.due(now) {
			t.Fatal("not due when its wait has passed")
		}
		say, wait := r.failed(now, "refused: not an edge of the tenant")
		if say {
			said++
		}
		if r.due(now.Add(wait - time.Millisecond)) {
			t.Fatal("due before its wait")
		}
		waits = append(waits, wait)
		now = now.Add(wait)
	}
	if waits[0] != linkEvery || waits[fastTries-1] != linkEvery || waits[fastTries] != 2*linkEvery || waits[len(waits)-1] != maxRetryWait {
		t.Fatalf("waits %v", waits)
	}
	// 40 tries over ~30 minutes: said the first time and once a minute.
	if elapsed := now.Sub(time.Unix(0, 0)); said > int(elapsed/maxRetryWait)+2 || said < 2 {
		t.Fatalf("said %d times over %v", said, elapsed)
	}
	if say, _ := r.failed(now, "another reason"); !say {
		t.Fatal("a new reason is not said")
	}
	r.ok()
	if say, wait := r.failed(now, "another reason"); !say || wait != linkEvery {
		t.Fatalf("after a success: said %v, wait %v", say, wait)
	}
}
