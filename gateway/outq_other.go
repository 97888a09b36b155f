//go:build !linux

package gateway

import "net"

// unsent cannot tell here: a client that stops reading is cut off by the
// write deadline alone.
func unsent(net.Conn) (queued, sndbuf int, ok bool) { return 0, 0, false }
