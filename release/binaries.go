package release

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// buildBinaries builds sessionlog for every target, as a release is
// built (no cgo, -trimpath, the version and commit stamped in), and
// archives each with the README and the CHANGELOG. It returns each
// binary's path.
func buildBinaries(ctx context.Context, c Config, v versions, m *Manifest) (map[Target]string, error) {
	if _, err := exec.LookPath("go"); err != nil {
		return nil, fmt.Errorf("%w: go", ErrTool)
	}
	bins := map[Target]string{}
	work := filepath.Join(c.Out, ".build")
	for _, t := range c.Targets {
		bin := filepath.Join(work, t.OS+"_"+t.Arch, "sessionlog")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
			"-ldflags", "-s -w -X main.version="+v.tag+" -X main.commit="+m.Commit, "-o", bin, "./cmd/sessionlog")
		cmd.Dir = c.Root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.OS, "GOARCH="+t.Arch, "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("release: build %s: %w\n%s", t, err, out)
		}
		bins[t] = bin
		name := fmt.Sprintf("sessionlog_%s_%s_%s.tar.gz", strings.TrimPrefix(v.tag, "v"), t.OS, t.Arch)
		files := map[string]string{"sessionlog": bin, "README.md": filepath.Join(c.Root, "README.md"), "CHANGELOG.md": filepath.Join(c.Root, "CHANGELOG.md")}
		if err := writeTarGz(filepath.Join(c.Out, name), files, m); err != nil {
			return nil, err
		}
		if err := m.add(c, name, "archive", t); err != nil {
			return nil, err
		}
	}
	return bins, nil
}

// writeTarGz writes files (name in the archive → path) with the commit's
// time, sorted by name: the same commit gives the same archive.
func writeTarGz(path string, files map[string]string, m *Manifest) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		src, err := os.Open(files[n])
		if err != nil {
			return err
		}
		st, err := src.Stat()
		if err == nil {
			mode := int64(0o644)
			if st.Mode()&0o111 != 0 {
				mode = 0o755
			}
			err = tw.WriteHeader(&tar.Header{Name: n, Mode: mode, Size: st.Size(), ModTime: m.Time, Format: tar.FormatPAX})
		}
		if err == nil {
			_, err = io.Copy(tw, src)
		}
		src.Close()
		if err != nil {
			return fmt.Errorf("release: archive %s: %w", path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

// add records the artifact name of c.Out with its checksum.
func (m *Manifest) add(c Config, name, kind string, t Target) error {
	sum, err := fileSHA256(filepath.Join(c.Out, name))
	if err != nil {
		return err
	}
	m.Artifacts = append(m.Artifacts, Artifact{Name: name, Kind: kind, SHA256: sum, Target: t})
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeChecksums writes checksums.txt as sha256sum does (sha256sum -c
// checks it), and removes the build's work directory.
func writeChecksums(c Config, m *Manifest) error {
	var b strings.Builder
	for _, a := range m.Artifacts {
		fmt.Fprintf(&b, "%s  %s\n", a.SHA256, a.Name)
	}
	if err := os.WriteFile(filepath.Join(c.Out, "checksums.txt"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(c.Out, ".build"))
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
