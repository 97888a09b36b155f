package sessiontest

import (
	"fmt"
	"testing"
)

// EachLayout runs a test of a stream-backed component on one stream and
// on four partitions (see stream.Config.Partitions).
func EachLayout(t *testing.T, test func(t *testing.T, partitions int)) {
	for _, p := range []int{1, 4} {
		t.Run(fmt.Sprintf("partitions=%d", p), func(t *testing.T) { test(t, p) })
	}
}
