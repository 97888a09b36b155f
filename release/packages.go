package release

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// packNPM packs the TypeScript client (clients/typescript) as npm
// publishes it, at the release's version, into c.Out.
func packNPM(ctx context.Context, c Config, v versions, m *Manifest) error {
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("%w: npm (for the TypeScript client's tarball)", ErrTool)
	}
	src := filepath.Join(c.Root, "clients", "typescript")
	dir := filepath.Join(c.Out, ".build", "npm")
	// What the package publishes (its package.json's files) and nothing
	// of the checkout's node_modules or test folders.
	var pkg map[string]any
	b, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		return fmt.Errorf("release: clients/typescript/package.json: %w", err)
	}
	files := []string{"package.json", "README.md"}
	if fs, ok := pkg["files"].([]any); ok {
		for _, f := range fs {
			files = append(files, fmt.Sprint(f))
		}
	} else {
		files = append(files, "src")
	}
	if err := copyPaths(src, dir, files); err != nil {
		return fmt.Errorf("release: npm package: %w", err)
	}
	pkg["version"] = v.number()
	b, _ = json.MarshalIndent(pkg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "package.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "npm", "pack", "--json", "--pack-destination", c.Out)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("release: npm pack: %w", err)
	}
	var packed []struct{ Filename string }
	if err := json.Unmarshal(out, &packed); err != nil || len(packed) != 1 {
		return fmt.Errorf("release: npm pack said %s (%v)", out, err)
	}
	return m.add(c, packed[0].Filename, "npm", Target{})
}

// buildWheel builds the Python client (clients/python) as a wheel at the
// release's version with the machine's setuptools (no index reached).
func buildWheel(ctx context.Context, c Config, v versions, m *Manifest) error {
	py := c.Python
	if py == "" {
		if py = wheelPython(ctx); py == "" {
			return fmt.Errorf("%w: python3 whose setuptools builds wheels (Debian: python3-setuptools python3-wheel)", ErrTool)
		}
	}
	src := filepath.Join(c.Root, "clients", "python")
	dir := filepath.Join(c.Out, ".build", "python")
	if err := copyPaths(src, dir, []string{"pyproject.toml", "README.md", "src"}); err != nil {
		return fmt.Errorf("release: python package: %w", err)
	}
	toml := filepath.Join(dir, "pyproject.toml")
	b, err := os.ReadFile(toml)
	if err != nil {
		return err
	}
	versionLine := regexp.MustCompile(`(?m)^version = "[^"]*"$`)
	if !versionLine.Match(b) {
		return fmt.Errorf("release: clients/python/pyproject.toml has no version line")
	}
	b = versionLine.ReplaceAll(b, []byte(`version = "`+v.python+`"`))
	if err := os.WriteFile(toml, b, 0o644); err != nil {
		return err
	}
	before, _ := filepath.Glob(filepath.Join(c.Out, "*.whl"))
	cmd := exec.CommandContext(ctx, py, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", c.Out, dir)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+fmt.Sprint(m.Time.Unix()), "PIP_DISABLE_PIP_VERSION_CHECK=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("release: pip wheel: %w\n%s", err, out)
	}
	after, _ := filepath.Glob(filepath.Join(c.Out, "*.whl"))
	if len(after) != len(before)+1 {
		return fmt.Errorf("release: pip wheel made %d wheels, want one", len(after)-len(before))
	}
	return m.add(c, filepath.Base(after[len(after)-1]), "wheel", Target{})
}

// wheelPython is the first python3 here whose setuptools builds wheels
// (with the wheel package, or setuptools 70.1 and later).
func wheelPython(ctx context.Context) string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if _, err := exec.LookPath(py); err != nil {
			continue
		}
		probe := `import setuptools, sys
try:
    import wheel
except ImportError:
    from setuptools.command import bdist_wheel
import pip`
		if exec.CommandContext(ctx, py, "-c", probe).Run() == nil {
			return py
		}
	}
	return ""
}

// copyPaths copies the files and directories names of src into dst, as
// they are named there.
func copyPaths(src, dst string, names []string) error {
	for _, n := range names {
		from, to := filepath.Join(src, n), filepath.Join(dst, n)
		st, err := os.Stat(from)
		if err == nil && st.IsDir() {
			err = os.CopyFS(to, os.DirFS(from))
		} else if err == nil {
			var b []byte
			if b, err = os.ReadFile(from); err == nil {
				if err = os.MkdirAll(filepath.Dir(to), 0o755); err == nil {
					err = os.WriteFile(to, b, 0o644)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return nil
}
