package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	slapi "github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/cluster/clustertest"
	"github.com/agentcore/sessionlog/codec"
	"github.com/agentcore/sessionlog/internal/peers"
	"github.com/agentcore/sessionlog/session/sessiontest"
	"github.com/agentcore/sessionlog/transcript"
)

// ccusagePackage is the ccusage our usage is held to: people bill from
// its figures. Pinned: it runs offline, with the prices it was built with.
const ccusagePackage = "ccusage@20.0.24"

// ccFigures are ccusage's figures of one group (a session, or a day and
// model): tokens exactly, cost in dollars.
type ccFigures struct {
	Input, Output, CacheRead, CacheWrite, Total int64
	Cost                                        float64
}

func (f *ccFigures) add(o ccFigures) {
	f.Input += o.Input
	f.Output += o.Output
	f.CacheRead += o.CacheRead
	f.CacheWrite += o.CacheWrite
	f.Total += o.Total
	f.Cost += o.Cost
}

// ccRow reads one row of ccusage's JSON: a session or a day, with its
// models' breakdowns (Claude Code's and pi's a list, Codex's a map).
type ccRow struct {
	SessionID   string  `json:"sessionId"`
	SessionFile string  `json:"sessionFile"`
	Date        string  `json:"date"`
	Input       int64   `json:"inputTokens"`
	Output      int64   `json:"outputTokens"`
	CacheRead   int64   `json:"cacheReadTokens"`
	CacheWrite  int64   `json:"cacheCreationTokens"`
	Total       int64   `json:"totalTokens"`
	TotalCost   float64 `json:"totalCost"`
	CostUSD     float64 `json:"costUSD"`
	Breakdowns  []struct {
		Model      string  `json:"modelName"`
		Input      int64   `json:"inputTokens"`
		Output     int64   `json:"outputTokens"`
		CacheRead  int64   `json:"cacheReadTokens"`
		CacheWrite int64   `json:"cacheCreationTokens"`
		Cost       float64 `json:"cost"`
	} `json:"modelBreakdowns"`
	Models map[string]struct {
		Input      int64 `json:"inputTokens"`
		Output     int64 `json:"outputTokens"`
		CacheRead  int64 `json:"cacheReadTokens"`
		CacheWrite int64 `json:"cacheCreationTokens"`
		Total      int64 `json:"totalTokens"`
	} `json:"models"`
}

func (r ccRow) figures() ccFigures {
	return ccFigures{Input: r.Input, Output: r.Output, CacheRead: r.CacheRead, CacheWrite: r.CacheWrite, Total: r.Total, Cost: r.TotalCost + r.CostUSD}
}

// byModel is a day's figures per model, under the model's name alone
// (ccusage writes pi's as "[pi] provider/model" or "[pi] model"). Codex's
// rows give no cost per model: their cost is the day's, under "".
func (r ccRow) byModel() map[string]ccFigures {
	out := map[string]ccFigures{}
	for _, b := range r.Breakdowns {
		name := strings.TrimPrefix(b.Model, "[pi] ")
		f := out[name]
		f.add(ccFigures{Input: b.Input, Output: b.Output, CacheRead: b.CacheRead, CacheWrite: b.CacheWrite,
			Total: b.Input + b.Output + b.CacheRead + b.CacheWrite, Cost: b.Cost})
		out[name] = f
	}
	for name, m := range r.Models {
		out[name] = ccFigures{Input: m.Input, Output: m.Output, CacheRead: m.CacheRead, CacheWrite: m.CacheWrite, Total: m.Total}
	}
	return out
}

// ccusage runs ccusage with env and args, offline, days in UTC.
func ccusage(t *testing.T, bin string, env []string, args ...string) []ccRow {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--json", "--offline", "-z", "UTC")...)
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1", "HOME="+t.TempDir()), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ccusage %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	var rep struct {
		Sessions []ccRow `json:"sessions"`
		Daily    []ccRow `json:"daily"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("ccusage %s: %v: %.300s", strings.Join(args, " "), err, out)
	}
	return append(rep.Sessions, rep.Daily...)
}

// copyTree copies the files of src matching keep into dst, each through
// edit (nil: as it is).
func copyTree(t *testing.T, src, dst string, edit func([]byte) []byte) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if edit != nil {
			data = edit(data)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// withoutProgress drops Claude Code's progress lines: ccusage's daily
// report counts the subagent calls they carry, its session report does
// not; ours is the session report's reading (a subagent's calls are its
// own file's), so a day is compared with ccusage's daily report of the
// files without them.
func withoutProgress(data []byte) []byte {
	var out [][]byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		var l struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(bytes.TrimSpace(line), &l) == nil && l.Type == "progress" {
			continue
		}
		out = append(out, line)
	}
	return bytes.Join(out, nil)
}

// TestUsageEqualsCcusage imports every real Claude Code transcript and
// Codex rollout under the repository's testdata, and pi's own sessions,
// and holds sessionlog's usage to ccusage's on the same files: per
// session (a Claude Code session with its subagents, as ccusage groups
// them) and per day and model, tokens exactly and cost within 1%.
func TestUsageEqualsCcusage(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed: ccusage, which the usage is compared with, cannot be installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := peers.InstallBin(ctx, ".ccusage", ccusagePackage, "ccusage")
	if err != nil {
		t.Fatalf("installing %s: %v", ccusagePackage, err)
	}

	// Each agent's files where ccusage looks for them.
	claudeSrc, codexSrc, piSrc := "../../transcript/testdata/claude-code", "../../transcript/testdata/codex", "../../session/sessiontest/testdata/pi16"
	home := t.TempDir()
	claudeDir, strippedDir := filepath.Join(home, "claude"), filepath.Join(home, "claude-stripped")
	copyTree(t, claudeSrc, filepath.Join(claudeDir, "projects", "p"), nil)
	copyTree(t, claudeSrc, filepath.Join(strippedDir, "projects", "p"), withoutProgress)
	codexDir := filepath.Join(home, "codex")
	copyTree(t, codexSrc, filepath.Join(codexDir, "sessions", "2026", "05", "11"), nil)
	piDir := filepath.Join(home, "pi")
	copyTree(t, piSrc, filepath.Join(piDir, "w"), nil)

	// Which of our sessions each of ccusage's is: its files' sessions.
	type agentRun struct {
		agent, env, dir, cmd string
		flags                []string
	}
	runs := []agentRun{
		{"claude-code", "CLAUDE_CONFIG_DIR=" + claudeDir, claudeDir, "claude", nil},
		{"codex", "CODEX_HOME=" + codexDir, codexDir, "codex", nil},
		{"pi", "PI_AGENT_DIR=" + piDir, piDir, "pi", []string{"--pi-path", piDir}},
	}
	data := t.TempDir()
	mustRun(t, data, "", "import", claudeDir, codexDir, piDir)

	sessions := 0
	for _, run := range runs {
		// Our sessions of the agent, and ccusage's name for each.
		ours := map[string]slapi.UsageSums{}
		var rep slapi.UsageReport
		if err := json.Unmarshal([]byte(mustRun(t, data, "", "usage", "-json", "-by", "session", "-agent", run.agent)), &rep); err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Rows {
			ours[r.Session] = r.UsageSums
		}
		groupOf := ccSessionNames(t, run.agent, run.dir)
		theirs := map[string]ccFigures{}
		for _, r := range ccusage(t, bin, []string{run.env}, append([]string{run.cmd, "session"}, run.flags...)...) {
			name := r.SessionID
			if r.SessionFile != "" {
				name = r.SessionFile
			}
			theirs[name] = r.figures()
		}
		// pi's calls outside the conversation, which ccusage does not read.
		extraSessions, extraDays := map[string]ccFigures{}, map[string]ccFigures{}
		if run.agent == "pi" {
			extraSessions, extraDays = piOutsideCalls(t, run.dir)
		}
		for name, f := range extraSessions {
			g := theirs[name]
			g.add(f)
			theirs[name] = g
		}
		mine := map[string]ccFigures{}
		for id, s := range ours {
			g, ok := groupOf[id]
			if !ok {
				t.Errorf("%s: our session %s is of no file imported", run.agent, id)
				continue
			}
			f := mine[g]
			f.add(ccFigures{Input: s.Input, Output: s.Output, CacheRead: s.CacheRead, CacheWrite: s.CacheWrite, Total: s.Tokens, Cost: s.Cost})
			mine[g] = f
			if s.UnpricedCalls != 0 {
				t.Errorf("%s: session %s has %d calls without a price", run.agent, id, s.UnpricedCalls)
			}
		}
		if len(theirs) == 0 {
			t.Fatalf("%s: ccusage reports no session", run.agent)
		}
		for name, want := range theirs {
			sessions++
			if err := sameFigures(mine[name], want); err != nil {
				t.Errorf("%s session %s: %v", run.agent, name, err)
			}
		}
		for name, got := range mine {
			if _, ok := theirs[name]; !ok && got.Total != 0 {
				t.Errorf("%s session %s: we count %d tokens, ccusage none", run.agent, name, got.Total)
			}
		}

		// Per day and model.
		env := run.env
		if run.agent == "claude-code" {
			env = "CLAUDE_CONFIG_DIR=" + strippedDir
		}
		theirDays := map[string]ccFigures{}
		dayCost := map[string]float64{}
		for _, r := range ccusage(t, bin, []string{env}, append([]string{run.cmd, "daily"}, run.flags...)...) {
			for m, f := range r.byModel() {
				theirDays[r.Date+" "+m] = f
			}
			dayCost[r.Date] = r.figures().Cost
		}
		for key, f := range extraDays {
			g := theirDays[key]
			g.add(f)
			theirDays[key] = g
			day, _, _ := strings.Cut(key, " ")
			dayCost[day] += f.Cost
		}
		if err := json.Unmarshal([]byte(mustRun(t, data, "", "usage", "-json", "-by", "day,model", "-agent", run.agent)), &rep); err != nil {
			t.Fatal(err)
		}
		myDays := map[string]ccFigures{}
		myDayCost := map[string]float64{}
		for _, r := range rep.Rows {
			// Ours is provider/model; ccusage's the model as the agent
			// wrote it (pi's may hold a '/' of its own).
			_, model, _ := strings.Cut(r.Model, "/")
			f := myDays[r.Day+" "+model] // several providers may serve one model
			f.add(ccFigures{Input: r.Input, Output: r.Output, CacheRead: r.CacheRead, CacheWrite: r.CacheWrite, Total: r.Tokens, Cost: r.Cost})
			myDays[r.Day+" "+model] = f
			myDayCost[r.Day] += r.Cost
		}
		for key, want := range theirDays {
			got := myDays[key]
			if run.agent == "codex" {
				want.Cost, got.Cost = 0, 0 // Codex's days give no cost per model: compared per day below
			}
			if err := sameFigures(got, want); err != nil {
				t.Errorf("%s day and model %s: %v", run.agent, key, err)
			}
		}
		for key, got := range myDays {
			if _, ok := theirDays[key]; !ok && got.Total != 0 {
				t.Errorf("%s day and model %s: we count %d tokens, ccusage none", run.agent, key, got.Total)
			}
		}
		for day, want := range dayCost {
			if err := sameFigures(ccFigures{Cost: myDayCost[day]}, ccFigures{Cost: want}); err != nil {
				t.Errorf("%s day %s: %v", run.agent, day, err)
			}
		}
	}
	t.Logf("%d sessions compared with %s", sessions, ccusagePackage)
	if sessions < 12 {
		t.Fatalf("only %d sessions were compared", sessions)
	}
	everyReaderAgrees(t, data)
}

// everyReaderAgrees holds the readers of a session's usage to the usage
// report, on every session of data: the stats verb, and the service's
// stats and usage over HTTP, as the console and the clients read them.
func everyReaderAgrees(t *testing.T, data string) {
	t.Helper()
	var rep slapi.UsageReport
	if err := json.Unmarshal([]byte(mustRun(t, data, "", "usage", "-json", "-by", "session")), &rep); err != nil {
		t.Fatal(err)
	}
	same := func(who, id string, got slapi.UsageReply, want slapi.UsageSums) {
		t.Helper()
		g := slapi.UsageSums{Turns: got.Turns, Calls: got.Calls, Input: got.Input, Output: got.Output, CacheRead: got.CacheRead, CacheWrite: got.CacheWrite,
			Tokens: got.TotalTokens, Cost: want.Cost, UnpricedCalls: got.UnpricedCalls, UnpricedTokens: got.UnpricedTokens}
		if g != want || math.Abs(got.Cost-want.Cost) > 1e-9 {
			t.Errorf("%s of %s: %+v, the usage report %+v", who, id, got, want)
		}
	}
	for _, r := range rep.Rows {
		var st struct{ Usage slapi.UsageReply }
		if err := json.Unmarshal([]byte(mustRun(t, data, "", "stats", "-json", r.Session)), &st); err != nil {
			t.Fatal(err)
		}
		same("sessionlog stats", r.Session, st.Usage, r.UsageSums)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", clustertest.FreePort(t))
	serveFor(t, data, "-http", addr)
	get := func(path string, v any) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(v) != nil {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
	}
	var served slapi.UsageReport
	sessiontest.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		get("/v1/usage?by=session", &served)
		// Costs summed in another order may differ in the last digits.
		g, w := served.Total, rep.Total
		costsAgree := math.Abs(g.Cost-w.Cost) <= 1e-9*max(1, math.Abs(w.Cost))
		g.Cost, w.Cost, g.CostPerTurn, w.CostPerTurn = 0, 0, 0, 0
		if g != w || !costsAgree {
			return fmt.Errorf("the served usage report %+v, the verb's %+v", served.Total, rep.Total)
		}
		return nil
	})
	for _, r := range rep.Rows {
		var st slapi.StatsReply
		get("/v1/sessions/"+url.PathEscape(r.Session)+"/stats?timeline=true", &st)
		same("GET stats", r.Session, st.Usage, r.UsageSums)
		var days slapi.UsageSums
		for _, d := range st.Timeline {
			days.Add(slapi.UsageSums{Turns: int64(d.Replies), Calls: d.Calls, Input: d.Input, Output: d.Output, CacheRead: d.CacheRead,
				CacheWrite: d.CacheWrite, Tokens: d.Tokens, Cost: d.Cost, UnpricedCalls: d.UnpricedCalls, UnpricedTokens: d.UnpricedTokens})
		}
		same("GET stats' timeline", r.Session, slapi.UsageReplyOf(days), r.UsageSums)
	}
	t.Logf("%d sessions read alike by usage, stats and the service", len(rep.Rows))
}

// piOutsideCalls sums, per file and per day and model, the calls pi 1.6
// records outside the conversation — usage entries (titles, cache
// warming) and the summarising calls of compactions and branch summaries
// — which ccusage 20 does not read and sessionlog counts: they are spent
// like any other. Read here from the files themselves, as pi wrote them.
func piOutsideCalls(t *testing.T, dir string) (perFile, perDay map[string]ccFigures) {
	t.Helper()
	perFile, perDay = map[string]ccFigures{}, map[string]ccFigures{}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.jsonl"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var l struct {
				Type      string `json:"type"`
				Timestamp string `json:"timestamp"`
				Model     string `json:"model"`
				Usage     *struct {
					Input, Output, CacheRead, CacheWrite, TotalTokens int64
					Cost                                              struct{ Total float64 }
				} `json:"usage"`
			}
			if json.Unmarshal(line, &l) != nil || l.Usage == nil || (l.Type != "usage" && l.Type != "compaction" && l.Type != "branch_summary") {
				continue
			}
			u := l.Usage
			f := ccFigures{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
				Total: max(u.TotalTokens, u.Input+u.Output+u.CacheRead+u.CacheWrite), Cost: u.Cost.Total}
			at, err := time.Parse(time.RFC3339Nano, l.Timestamp)
			if err != nil {
				t.Fatalf("%s: %s entry without a time", p, l.Type)
			}
			name, key := strings.TrimSuffix(filepath.Base(p), ".jsonl"), at.UTC().Format(time.DateOnly)+" "+l.Model
			g, d := perFile[name], perDay[key]
			g.add(f)
			d.add(f)
			perFile[name], perDay[key] = g, d
		}
	}
	if len(perFile) == 0 {
		t.Fatal("pi's files hold no call outside the conversation: the comparison would not show they are counted")
	}
	return perFile, perDay
}

// sameFigures is nil when got equals want: tokens exactly, cost within 1%
// (or a millionth of a dollar).
func sameFigures(got, want ccFigures) error {
	var errs []error
	for _, c := range []struct {
		name      string
		got, want int64
	}{{"input", got.Input, want.Input}, {"output", got.Output, want.Output}, {"cache read", got.CacheRead, want.CacheRead},
		{"cache write", got.CacheWrite, want.CacheWrite}, {"tokens", got.Total, want.Total}} {
		if c.got != c.want {
			errs = append(errs, fmt.Errorf("%s %d, ccusage %d", c.name, c.got, c.want))
		}
	}
	if d := math.Abs(got.Cost - want.Cost); d > 1e-6 && d > 0.01*math.Abs(want.Cost) {
		errs = append(errs, fmt.Errorf("cost $%.6f, ccusage $%.6f", got.Cost, want.Cost))
	}
	return errors.Join(errs...)
}

// ccSessionNames maps each session imported from an agent's files under
// dir to the name ccusage gives its group: a Claude Code session's file
// name (its subagents' too), a Codex rollout's file name, a pi file's
// name.
func ccSessionNames(t *testing.T, agent, dir string) map[string]string {
	t.Helper()
	names := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := transcript.Detect(data)
		if err != nil {
			return nil
		}
		base := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		switch f {
		case transcript.FormatPi:
			file, err := codec.DecodeFile(data, p, codec.Lenient)
			if err != nil {
				return err
			}
			names[file.Tree.Header().ID] = base
		default:
			src := transcript.SourceFor(f, p)
			if src.ID == "" {
				// The lines name the session.
				d, err := transcript.Decode(f, data, src, codec.Lenient)
				if err != nil {
					return err
				}
				src.ID = d.Header.ID
			}
			if _, ok := names[src.ID]; ok {
				return nil // imported from the file before it, as import does
			}
			names[src.ID] = base
			if src.ParentSession != "" {
				names[src.ID] = src.ParentSession
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
