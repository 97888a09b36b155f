package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// nodeApp is an application in dir that installed packages and this
// repository's TypeScript client (a copy, as from the registry), with
// script in it; "" and a note in r when node, npm or the registry is
// missing. run runs the script with args and decodes its last line.
type nodeApp struct {
	dir, node, script string
}

func installApp(ctx context.Context, cfg Config, dir, part string, script []byte, r *Report, p progress, packages ...string) *nodeApp {
	nodeBin, npm := lookPath("node"), lookPath("npm")
	if nodeBin == "" || npm == "" {
		r.note("%s: no node or npm, not timed", part)
		return nil
	}
	app := filepath.Join(dir, part+"-app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		r.note("%s: %v", part, err)
		return nil
	}
	os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name":"`+part+`-bench","private":true,"type":"module"}`), 0o644)
	name := filepath.Join(app, part+"_bench.mjs")
	os.WriteFile(name, script, 0o644)
	client, _ := filepath.Abs(filepath.Join(cfg.ClientsDir, "typescript"))
	p.say("%s: npm install of %v and the client", part, packages)
	install := exec.CommandContext(ctx, npm, append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error", "--install-links", client}, packages...)...)
	install.Dir = app
	if out, err := install.CombinedOutput(); err != nil {
		r.note("%s: npm install failed, not timed: %v: %s", part, err, lastLine(out))
		return nil
	}
	return &nodeApp{dir: app, node: nodeBin, script: name}
}

func (a *nodeApp) run(ctx context.Context, into any, args ...string) error {
	cmd := exec.CommandContext(ctx, a.node, append([]string{a.script}, args...)...)
	cmd.Dir = a.dir
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return fmt.Errorf("%s %v: %w: %s", filepath.Base(a.script), args, err, lastLine(ee.Stderr))
		}
		return err
	}
	return json.Unmarshal([]byte(lastLine(out)), into)
}
