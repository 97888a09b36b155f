//go:build !unix

package follow

import "os"

// openNonblock opens p read-only (no FIFOs to block on here).
func openNonblock(p string) (*os.File, error) { return os.Open(p) }
