//go:build !unix

package bench

import "time"

// ownCPU is unknown here: the other load is not told apart.
func ownCPU() time.Duration { return 0 }
