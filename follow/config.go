// Package follow tails local coding agents' session directories into a
// session repository as the agents write them: Claude Code's
// (~/.claude/projects), Codex's (~/.codex/sessions) and pi's
// (~/.pi/agent/sessions). Each file is a session, taken in a line at a
// time (see package transcript), a poll interval behind the agent.
//
// What it has taken in is kept in a state file, so that a follow started
// again resumes where it stopped; an entry already in its session (by its
// id: the line's identity) is never appended twice, whatever the state
// file says. A file that shrinks, or whose first bytes change, was
// rewritten or truncated: the follow says so and reads it again from the
// start, appending only the lines its session lacks.
//
// Directories are polled (a stat of each known file every Interval, a walk
// of the directories every RescanEvery polls), not watched: it works the
// same on every system and file system, and costs little at these sizes.
package follow

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Config is a follow's configuration.
type Config struct {
	// Dirs are the directories searched (recursively) for *.jsonl files.
	Dirs []string
	// Interval is how often known files are checked for new lines.
	Interval time.Duration
	// RescanEvery is how many polls pass between walks of Dirs for new
	// files.
	RescanEvery int
	// StatePath is where the follow keeps what it has taken in; empty: in
	// memory only (a restart reads every file again, appending nothing
	// twice).
	StatePath string
	// IdleClose closes a session not written for this long (its store
	// holds the session in memory); it is opened again on its next line.
	IdleClose time.Duration
	// FollowLinks takes symbolic links to files outside Dirs too (by
	// default a link is followed only within the folder it is in).
	FollowLinks bool
	// Log hears what the follow does: new sessions, lines taken in,
	// files rewritten, lines it cannot read. Nil: io.Discard.
	Log io.Writer
}

// DefaultConfig polls every 200 ms and looks for new files every 2 s.
func DefaultConfig() Config {
	return Config{Interval: 200 * time.Millisecond, RescanEvery: 10, IdleClose: time.Minute}
}

// ErrConfig is an invalid Config.
var ErrConfig = errors.New("follow: invalid config")

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	switch {
	case len(c.Dirs) == 0:
		return fmt.Errorf("%w: no directories", ErrConfig)
	case c.Interval <= 0:
		return fmt.Errorf("%w: interval %v", ErrConfig, c.Interval)
	case c.RescanEvery <= 0:
		return fmt.Errorf("%w: rescan every %d polls", ErrConfig, c.RescanEvery)
	case c.IdleClose <= 0:
		return fmt.Errorf("%w: idle close %v", ErrConfig, c.IdleClose)
	}
	return nil
}
