package transcript

import "testing"

// The folder names are the agents' own (Claude Code's observed rule, pi's
// getDefaultSessionDir), and a cwd is mapped where it is a member named
// cwd, every other byte kept.
func TestPlaces(t *testing.T) {
	for _, c := range []struct{ cwd, claude, pi string }{
		{"/home/user/my_example_workspace", "-home-user-my-example-workspace", "--home-user-my_example_workspace--"},
		{"/Users/foo/.config", "-Users-foo--config", "--Users-foo-.config--"},
		{"/Users/u/Documents/Проект", "-Users-u-Documents-------", "--Users-u-Documents-Проект--"},
		{`C:\git\cc-plus`, "C--git-cc-plus", "--C--git-cc-plus--"},
	} {
		if got := ClaudeProjectDir(c.cwd); got != c.claude {
			t.Errorf("ClaudeProjectDir(%q) = %q, want %q", c.cwd, got, c.claude)
		}
		if got := PiSessionDir(c.cwd); got != c.pi {
			t.Errorf("PiSessionDir(%q) = %q, want %q", c.cwd, got, c.pi)
		}
	}
	if got := PiSessionFile("2025-01-02T03:04:05.678Z", "abc"); got != "2025-01-02T03-04-05-678Z_abc.jsonl" {
		t.Errorf("PiSessionFile: %q", got)
	}
	if got, err := CodexSessionPath("rollout-2026-05-11T11-26-55-019e1625.jsonl"); err != nil || got != "2026/05/11/rollout-2026-05-11T11-26-55-019e1625.jsonl" {
		t.Errorf("CodexSessionPath: %q %v", got, err)
	}
	if _, err := CodexSessionPath("../rollout-2026-05-11T1.jsonl"); err == nil {
		t.Error("a name with a directory is not a rollout's name")
	}
	maps := []PathMap{{From: "/Users/a/src", To: "/home/a/code"}}
	in := "{\"type\":\"x\",\"cwd\":\"/Users/a/src/p\",\"text\":\"cwd \\u0041 /Users/a/src\",\"payload\":{\"cwd\" : \"/Users/a/srcx\",\"n\":[{\"cwd\":\"/Users/a/src\"}]}}\r\n\n{\"cwd\":\"/elsewhere\"}"
	want := "{\"type\":\"x\",\"cwd\":\"/home/a/code/p\",\"text\":\"cwd \\u0041 /Users/a/src\",\"payload\":{\"cwd\" : \"/Users/a/srcx\",\"n\":[{\"cwd\":\"/home/a/code\"}]}}\r\n\n{\"cwd\":\"/elsewhere\"}"
	got, err := MapCwd([]byte(in), maps)
	if err != nil || string(got) != want {
		t.Fatalf("MapCwd:\n got %s (%v)\nwant %s", got, err, want)
	}
	if _, err := ParsePathMap("relative=/x"); err == nil {
		t.Error("a relative FROM is refused")
	}
}
