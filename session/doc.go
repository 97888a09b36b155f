// Package session is the pure model of a sessionlog session: entries, the
// session header, the tree they form, and the Session API that appends to a
// Store and builds the model context. It does no I/O, starts no goroutines
// and never reads the wall clock: callers inject a Clock and an IDSource.
package session
