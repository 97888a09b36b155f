//go:build linux

package gateway

import (
	"net"
	"syscall"
	"unsafe"
)

// unsent is how many bytes written to c the peer has not acknowledged yet
// (SIOCOUTQ) and the socket's send buffer: what a client that stopped
// reading leaves in the kernel. ok is false where it cannot be told.
func unsent(c net.Conn) (queued, sndbuf int, ok bool) {
	tc, isTCP := c.(*net.TCPConn)
	if !isTCP {
		return 0, 0, false
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var qerr, berr error
	cerr := raw.Control(func(fd uintptr) {
		var n int32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n))); e != 0 {
			qerr = e
			return
		}
		queued = int(n)
		sndbuf, berr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	})
	if cerr != nil || qerr != nil || berr != nil {
		return 0, 0, false
	}
	return queued, sndbuf, true
}
