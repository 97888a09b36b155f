// Package system provides the real clock and random entry ids that the pure
// session package takes by injection.
package system

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/agentcore/sessionlog/session"
)

// Clock is the wall clock.
type Clock struct{}

// Now implements session.Clock.
func (Clock) Now() time.Time { return time.Now() }

// IDs makes random 8-hex-digit ids, as pi does.
type IDs struct{}

// NewID implements session.IDSource.
func (IDs) NewID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// SessionID returns a new random session id: 26 base32 characters, valid
// in file names and as a NATS subject token.
func SessionID() string {
	return rand.Text()
}

// Config returns a session.Config with the wall clock and random ids.
func Config() session.Config {
	return session.Config{Clock: Clock{}, IDs: IDs{}}
}
