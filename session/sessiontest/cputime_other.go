//go:build !unix

package sessiontest

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
