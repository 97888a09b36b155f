// Package integration runs sessionlog as separate OS processes — a
// three-node cluster of `sessionlog serve` — under faults (kill -9 of a
// follower and of the stream leader, restarts, SIGSTOP, a node cut off by
// a TCP proxy on its routes) while writers append, then checks that every
// acknowledged entry is there exactly once, that nothing was stored that
// was never sent, and that the nodes converge. upgrade_test.go builds the
// previous release (CHANGELOG.md) from the repository's history and rolls
// a cluster of it forward to this build and one node back under the same
// checks. The tests are in *_test.go; `go test ./integration -soak 10m`
// runs longer (the upgrade goes up and down again until then). Edge nodes
// and single serve processes are tested in integration/edges, a package
// of its own so that each has go test's ten minutes; both start serve
// through integration/internal/serveproc.
package integration
