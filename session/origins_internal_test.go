package session

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Ordering timestamps of one width by their text agrees with parsing
// them, for valid and invalid ones alike.
func TestLaterOriginByTextAgreesWithParsing(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	stamp := func() string {
		switch r.IntN(4) {
		case 0: // not a time, same width
			return fmt.Sprintf("2026-13-%02dT00:00:00.000Z", r.IntN(40))
		default:
			return fmt.Sprintf("20%02d-%02d-%02dT%02d:%02d:%02d.%03dZ", r.IntN(3)+25, r.IntN(12)+1, r.IntN(28)+1, r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000))
		}
	}
	for range 20000 {
		a, b := OriginLeaf{Origin: "a", At: stamp()}, OriginLeaf{Origin: "b", At: stamp()}
		if laterOrigin(a, b) != laterOriginParsed(a, b) || laterOrigin(b, a) != laterOriginParsed(b, a) {
			t.Fatalf("%s against %s: by text %v, parsed %v", a.At, b.At, laterOrigin(a, b), laterOriginParsed(a, b))
		}
	}
}
