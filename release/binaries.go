package release

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
		name := fmt.Sprintf("sessionlog_%s_%s_%s.tar.gz", v.number(), t.OS, t.Arch)
		files := map[string]string{"sessionlog": bin, "README.md": filepath.Join(c.Root, "README.md"), "CHANGELOG.md": filepath.Join(c.Root, "CHANGELOG.md")}
		if err := writeArchive(filepath.Join(c.Out, name), files, m); err != nil {
			return nil, err
		}
		if err := m.add(c, name, "archive", t); err != nil {
			return nil, err
		}
	}
	return bins, nil
}

// writeArchive writes files (name in the archive → path; a name ending in
// / is a directory) as a tar, gzipped when path ends in .gz, with the
// commit's time, sorted by name: the same commit gives the same archive.
func writeArchive(path string, files map[string]string, m *Manifest) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var w io.Writer = f
	var gz *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		gz = gzip.NewWriter(f)
		w = gz
	}
	tw := tar.NewWriter(w)
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if err := addToArchive(tw, n, files[n], m); err != nil {
			return fmt.Errorf("release: archive %s: %w", path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			return err
		}
	}
	return f.Close()
}

func addToArchive(tw *tar.Writer, name, path string, m *Manifest) error {
	if strings.HasSuffix(name, "/") {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: m.Time, Format: tar.FormatPAX})
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	mode := int64(0o644)
	if st.Mode()&0o111 != 0 {
		mode = 0o755
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: st.Size(), ModTime: m.Time, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(tw, src)
	return err
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
