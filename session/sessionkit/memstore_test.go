package sessionkit_test

import (
	"testing"

	"github.com/agentcore/sessionlog/session"
	"github.com/agentcore/sessionlog/session/sessionkit"
	"github.com/agentcore/sessionlog/session/sessiontest"
)

func TestMemoryStoreConformance(t *testing.T) {
	sessiontest.Run(t, sessiontest.Backend{
		Name: "memory",
		New: func(t *testing.T, h session.Header) session.Store {
			return sessionkit.NewMemoryStore(h)
		},
	})
}
