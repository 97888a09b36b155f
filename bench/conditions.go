package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Conditions are what a run's figures depend on beyond the code: the
// CPU, the peers' versions, and whether anything else used the machine
// while it ran — printed at the top of the report, so that a run
// elsewhere can be compared with this one.
type Conditions struct {
	// CPU is the processor's model name (from /proc/cpuinfo).
	CPU string
	// Node and Pi are the versions of the Node on PATH and of pi in
	// Config.PiModules, PiNode that of the Node that runs pi (the one
	// installed beside it when there is one: pi 1.x needs Node 22); ""
	// when absent or not asked for.
	Node, Pi, PiNode string
	// OtherLoad is the share of the machine's CPU time that other
	// processes used during the run (0..1; -1 when unknown).
	OtherLoad float64

	startBusy, startTotal uint64
	startSelf             time.Duration
}

// startConditions reads what is known before a run and the CPU counters
// the other load is measured from.
func startConditions(cfg Config) *Conditions {
	c := &Conditions{CPU: cpuModel(), OtherLoad: -1}
	c.Node = nodeVersion(lookPath("node"))
	if cfg.PiModules != "" {
		c.Pi = piVersion(cfg.PiModules)
		if node, err := piNode(cfg.PiModules); err == nil {
			c.PiNode = nodeVersion(node)
		}
	}
	c.startBusy, c.startTotal, _ = cpuTimes()
	c.startSelf = ownCPU()
	return c
}

// finish measures the other processes' share of the run's CPU time: the
// machine's busy time less this process's and its children's.
func (c *Conditions) finish() {
	busy, total, ok := cpuTimes()
	if !ok || total <= c.startTotal {
		return
	}
	tick := time.Second / 100 // USER_HZ
	machine := time.Duration(total-c.startTotal) * tick
	others := time.Duration(busy-c.startBusy)*tick - (ownCPU() - c.startSelf)
	c.OtherLoad = max(0, float64(others)/float64(machine))
}

// String is the conditions on one line.
func (c *Conditions) String() string {
	parts := []string{"CPU " + orUnknown(c.CPU)}
	if c.Node != "" {
		parts = append(parts, "Node "+c.Node)
	}
	if c.Pi != "" {
		parts = append(parts, "pi "+c.Pi+" on Node "+orUnknown(c.PiNode))
	}
	switch {
	case c.OtherLoad < 0:
		parts = append(parts, "other load unknown")
	case c.OtherLoad < 0.05:
		parts = append(parts, fmt.Sprintf("other processes used %.1f%% of the CPU during the run (idle)", 100*c.OtherLoad))
	default:
		parts = append(parts, fmt.Sprintf("OTHER PROCESSES USED %.0f%% OF THE CPU DURING THE RUN: not an idle machine", 100*c.OtherLoad))
	}
	return strings.Join(parts, "; ")
}

// nodeVersion is what node --version says ("" for no node).
func nodeVersion(node string) string {
	if node == "" {
		return ""
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// cpuTimes is the machine's busy and total CPU time, in ticks, from the
// first line of /proc/stat.
func cpuTimes() (busy, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, true
}

// piVersion is the version of pi in a node_modules dir.
func piVersion(modules string) string {
	for _, pkg := range []string{"@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"} {
		b, err := os.ReadFile(filepath.Join(modules, pkg, "package.json"))
		if err != nil {
			continue
		}
		var p struct{ Version string }
		if json.Unmarshal(b, &p) == nil {
			return pkg + " " + p.Version
		}
	}
	return ""
}
