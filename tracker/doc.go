// Package replica keeps session trees up to date by consuming the stream:
// a catch-up from snapshot and stream, then a live tail. Any process, on
// any node, running a replica sees the same trees and leaves as the
// writers, and can wait until it has applied a writer's append
// (read-your-writes).
package tracker
