package edges

import (
	"testing"

	"github.com/agentcore/sessionlog/integration/internal/serveproc"
)

// bin is the sessionlog binary the tests run, built once.
var bin string

func TestMain(m *testing.M) { serveproc.Main(m, &bin) }
