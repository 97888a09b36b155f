package hygiene

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// The module passes staticcheck, the version go.mod's tool directive pins
// (go tool staticcheck): no unused code, no deprecated calls, none of its
// bug patterns. It reads every package of the module, test files too.
func TestStaticcheckClean(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, which runs staticcheck, is not on PATH: %v", err)
	}
	cmd := exec.Command(goBin, "tool", "staticcheck", "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool staticcheck ./...: %v\n%s", err, out)
	}
}
