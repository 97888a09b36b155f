package sessiontest

import (
	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessiongen"
)

// Generate is sessiongen.Generate: a linear pi-like session of n entries.
func Generate(n int) (session.Header, []*session.Entry) { return sessiongen.Generate(n) }
