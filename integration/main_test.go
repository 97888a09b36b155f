package integration

import (
	"flag"
	"testing"

	"github.com/agentcore/sessionlog/integration/internal/serveproc"
)

var (
	only = flag.String("fault", "", "run only the faults whose name contains this (e.g. \"leader\")")
	soak = flag.Duration("soak", 0, "repeat the fault cycle for this long (0: one bounded round, as CI runs)")
	bin  string
)

func TestMain(m *testing.M) {
	flag.Parse()
	serveproc.Main(m, &bin)
}
