//go:build unix

package cluster

import "syscall"

// diskSpace is the space free to the process and the size of the file
// system holding dir; ok is false when it cannot be read.
func diskSpace(dir string) (free, size uint64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), true
}
