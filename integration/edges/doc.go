// Package edges runs edge nodes and single `sessionlog serve` processes
// as separate OS processes — an edge writing offline and syncing to its
// hub, choosing what goes up, conflicts between edges, its progress and
// trust, and tenants' bounds on one node — apart from package integration's
// clusters under faults, so that each package's tests have their own time.
package edges
