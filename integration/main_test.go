package integration

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var (
	only = flag.String("fault", "", "run only the faults whose name contains this (e.g. \"leader\")")
	soak = flag.Duration("soak", 0, "repeat the fault cycle for this long (0: one bounded round, as CI runs)")
	bin  string
)

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "sessionlog-integration-")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "sessionlog")
	build := exec.Command("go", "build", "-o", bin, "github.com/agentcore/sessionlog/cmd/sessionlog")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Println("build sessionlog:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
