package integration

import (
	"testing"

	"github.com/agentcore/sessionlog/integration/internal/serveproc"
)

// serve processes of this package's binary (package serveproc).
type serveProc = serveproc.Proc

func startServe(t *testing.T, data string, args ...string) *serveProc {
	t.Helper()
	return serveproc.Start(t, bin, data, args...)
}

var client, appendMessages, hubHolds = serveproc.Client, serveproc.AppendMessages, serveproc.HubHolds
