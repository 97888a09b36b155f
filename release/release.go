// Package release makes a release of sessionlog from one commit: the
// binaries for linux and darwin on amd64 and arm64 in archives, their
// checksums, an SBOM of what the binary is built from, a container image
// (an OCI image index of linux/amd64 and linux/arm64, configured as
// deploy/Dockerfile's runtime stage), the TypeScript client as an npm
// tarball and the Python client as a wheel, all of the one version.
//
// `go run ./cmd/release -version v0.5.0` makes them in dist/ from a
// clean checkout of the tag; -snapshot makes the same from any commit,
// versioned after the newest tag (what the tests run). The steps are in
// docs/operations.md, "Releases".
package release

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Target is a platform a binary is built for.
type Target struct{ OS, Arch string }

func (t Target) String() string { return t.OS + "/" + t.Arch }

// Targets are the platforms of a release.
var Targets = []Target{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// Config says what to make.
type Config struct {
	// Root is the repository's root; Out the directory the artifacts go
	// to (made; it must not hold anything yet).
	Root, Out string
	// Version is the release's (v1.2.3). With Snapshot it may be empty:
	// it is then the newest tag's next patch, marked as a snapshot.
	Version  string
	Snapshot bool
	// Targets are the platforms built (all of Targets for a release).
	Targets []Target
	// Python runs the wheel's build (empty: the first python3 found
	// whose setuptools can build wheels).
	Python string
}

// DefaultConfig makes every artifact of the checkout at root into
// root/dist.
func DefaultConfig(root string) Config {
	return Config{Root: root, Out: filepath.Join(root, "dist"), Targets: Targets}
}

var (
	// ErrConfig is a Config that cannot make a release.
	ErrConfig = errors.New("release: invalid config")
	// ErrTool is a tool a step needs (git, go, npm, python3 with
	// setuptools) missing from this machine.
	ErrTool = errors.New("release: a tool is missing")
)

var semver = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)$`)

// Validate says what is wrong with c.
func (c Config) Validate() error {
	switch {
	case c.Root == "" || c.Out == "":
		return fmt.Errorf("%w: the repository root and the output directory must be given", ErrConfig)
	case c.Version != "" && !semver.MatchString(c.Version):
		return fmt.Errorf("%w: version %q is not vMAJOR.MINOR.PATCH", ErrConfig, c.Version)
	case c.Version == "" && !c.Snapshot:
		return fmt.Errorf("%w: a release needs its version (or make a snapshot)", ErrConfig)
	case len(c.Targets) == 0:
		return fmt.Errorf("%w: no targets", ErrConfig)
	}
	for _, t := range c.Targets {
		if !slices.Contains(Targets, t) {
			return fmt.Errorf("%w: target %s is not one of a release's", ErrConfig, t)
		}
	}
	return nil
}

// Artifact is one file made, with its SHA-256.
type Artifact struct {
	Name, Kind, SHA256 string
	Target             Target // binaries' archives
}

// Manifest is what Build made.
type Manifest struct {
	Version   string // with its v
	Commit    string
	Time      time.Time // the commit's: every artifact's timestamps
	Artifacts []Artifact
}

// versions are a release's version as each ecosystem writes it: its tag
// (v1.2.3, or a snapshot's v1.2.4-snapshot.g<commit>), and Python's.
type versions struct {
	tag, python string
}

// number is the version without its v: what file names and npm write.
func (v versions) number() string { return strings.TrimPrefix(v.tag, "v") }

// Build makes the release c describes.
func Build(ctx context.Context, c Config) (*Manifest, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(c.Out); err != nil || len(ents) > 0 {
		return nil, fmt.Errorf("%w: %s is not empty (%v)", ErrConfig, c.Out, err)
	}
	head, err := git(ctx, c.Root, "show", "-s", "--format=%H %cI", "HEAD")
	if err != nil {
		return nil, err
	}
	commit, when, _ := strings.Cut(head, " ")
	at, err := time.Parse(time.RFC3339, when)
	if err != nil {
		return nil, fmt.Errorf("release: the commit's time %q: %w", when, err)
	}
	v, err := c.versions(ctx, commit)
	if err != nil {
		return nil, err
	}
	m := &Manifest{Version: v.tag, Commit: commit, Time: at.UTC()}
	bins, err := buildBinaries(ctx, c, v, m)
	if err != nil {
		return nil, err
	}
	if err := writeSBOM(c, v, m, bins[c.Targets[0]]); err != nil {
		return nil, err
	}
	if err := buildImage(c, v, m, bins); err != nil {
		return nil, err
	}
	if err := packNPM(ctx, c, v, m); err != nil {
		return nil, err
	}
	if err := buildWheel(ctx, c, v, m); err != nil {
		return nil, err
	}
	return m, writeChecksums(c, m)
}

// versions is c's version, or a snapshot's: the newest tag's next patch,
// marked with the commit.
func (c Config) versions(ctx context.Context, commit string) (versions, error) {
	tag := c.Version
	if tag == "" {
		last, err := git(ctx, c.Root, "describe", "--tags", "--abbrev=0", "--match", "v[0-9]*")
		if err != nil || !semver.MatchString(last) {
			last = "v0.0.0" // no release yet
		}
		p := semver.FindStringSubmatch(last)
		var patch int
		fmt.Sscan(p[3], &patch)
		tag = fmt.Sprintf("v%s.%s.%d", p[1], p[2], patch+1)
	}
	v := versions{tag: tag, python: strings.TrimPrefix(tag, "v")}
	if c.Snapshot {
		// A prerelease of the next patch (g, as git describe writes it:
		// never read as a number); Python's is a development release.
		v.tag += "-snapshot.g" + commit[:12]
		v.python += ".dev0"
		return v, nil
	}
	// A release is made from its tag, and from nothing else.
	if at, err := git(ctx, c.Root, "describe", "--tags", "--exact-match", "HEAD"); err != nil || at != tag {
		return v, fmt.Errorf("%w: HEAD is not tagged %s (%q): check the tag out, or make a snapshot", ErrConfig, tag, at)
	}
	if dirty, err := git(ctx, c.Root, "status", "--porcelain", "--untracked-files=no"); err != nil || dirty != "" {
		return v, fmt.Errorf("%w: the checkout has changes not committed: a release is made from its tag as committed", ErrConfig)
	}
	return v, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", fmt.Errorf("%w: git", ErrTool)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("release: git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
