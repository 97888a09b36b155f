package main

import "time"

// retries paces asking again after a refusal: after fastTries at
// linkEvery the wait doubles up to maxRetryWait, and a refusal is said when it first comes,
// when it says something new, and once per maxRetryWait while it lasts —
// not at every try (a refused edge said the same line every 500 ms).
type retries struct {
	n    int       // refusals in a row
	at   time.Time // when to ask again
	said string    // the refusal said last
}

// maxRetryWait bounds the wait between tries after refusals; the first
// fastTries are linkEvery apart.
const (
	maxRetryWait = time.Minute
	fastTries    = 4
)

// due tells whether it is time to ask again.
func (r *retries) due(now time.Time) bool { return r.n == 0 || !now.Before(r.at) }

// failed counts a refusal at now and says whether to say it, and how long
// until the next try.
func (r *retries) failed(now time.Time, msg string) (say bool, wait time.Duration) {
	// The first tries keep the quick pace (a hub still starting answers
	// in a moment), then the wait doubles.
	wait = linkEvery << min(max(r.n-fastTries+1, 0), 16)
	wait = min(wait, maxRetryWait)
	r.n++
	r.at = now.Add(wait)
	say = msg != r.said || wait == maxRetryWait
	r.said = msg
	return say, wait
}

// ok forgets the refusals: the next one is said again.
func (r *retries) ok() { *r = retries{} }
