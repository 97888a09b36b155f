package main

import (
	"fmt"
	"io"
)

// fileBudget shares the process's file descriptors out, so that a flood
// of connections of one kind is refused by its own bound rather than
// taking the descriptors the rest of the node needs: JetStream's files,
// the search index, the data dir's lock and logs (the reserve), the HTTP
// gateway's client connections and the NATS connections it makes for its
// users, and the node's NATS clients (every tenant's, the gateway's users
// among them).
type fileBudget struct {
	limit, reserve, http, gatewayUsers, nats int
	scaled                                   bool // http or gatewayUsers were cut to fit
}

// Descriptors kept for the node itself: an eighth of the limit, between
// these bounds.
const (
	minFileReserve = 128
	maxFileReserve = 1024
)

// budgetFiles shares limit (the process's RLIMIT_NOFILE; 0: unknown, no
// bounds derived) between the parts, wanting http and gatewayUsers.
func budgetFiles(limit, http, gatewayUsers int) fileBudget {
	if limit <= 0 {
		return fileBudget{http: http, gatewayUsers: gatewayUsers}
	}
	b := fileBudget{limit: limit, reserve: min(maxFileReserve, max(minFileReserve, limit/8))}
	avail := max(0, limit-b.reserve)
	// NATS clients keep at least half of what is left: they are how
	// tenants' agents and the node's own services connect.
	b.http = min(http, avail/3)
	b.gatewayUsers = min(gatewayUsers, avail/6)
	b.scaled = b.http < http || b.gatewayUsers < gatewayUsers
	b.nats = max(1, avail-b.http-b.gatewayUsers) // 0 would mean the server's default: no bound
	return b
}

// report says how the descriptors were shared when a bound had to be cut.
func (b fileBudget) report(w io.Writer) {
	if b.scaled && w != nil {
		fmt.Fprintf(w, "sessionlog: %d file descriptors (ulimit -n): HTTP connections cut to %d and gateway users to %d; NATS clients %d; %d kept for the node\n",
			b.limit, b.http, b.gatewayUsers, b.nats, b.reserve)
	}
}
