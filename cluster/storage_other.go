//go:build !unix

package cluster

// diskSpace cannot read the space of a file system here.
func diskSpace(string) (free, size uint64, ok bool) { return 0, 0, false }
