package release_test

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/agentcore/sessionlog/release"
)

var allTargets = flag.Bool("all-targets", false, "build every target of a release (about a minute and a half each), not only this machine's")

// The release process in snapshot mode, as a release runs it, and every
// artifact checked for what it must be: the binaries run (this machine's)
// or are of their platform, the checksums hold, the SBOM lists what the
// binary was linked from, the image is configured as deploy/Dockerfile's
// runtime stage and carries the same binary, and the npm tarball and the
// wheel are the clients at the release's version.
func TestSnapshotRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c := release.DefaultConfig("..")
	c.Out = filepath.Join(t.TempDir(), "dist")
	c.Snapshot = true
	host := release.Target{OS: runtime.GOOS, Arch: runtime.GOARCH}
	if !*allTargets {
		// This machine's platform only: each more is a cross build of
		// everything, about 90 s on two cores.
		c.Targets = []release.Target{host}
		if host.OS != "linux" {
			c.Targets = append(c.Targets, release.Target{OS: "linux", Arch: "amd64"}) // the image's
		}
	}
	m, err := release.Build(ctx, c)
	if errors.Is(err, release.ErrTool) {
		t.Skipf("%v: the release cannot be made on this machine", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	head, _ := exec.Command("git", "rev-parse", "HEAD").Output()
	if m.Commit != strings.TrimSpace(string(head)) || !regexp.MustCompile(`^v\d+\.\d+\.\d+-snapshot\.g[0-9a-f]{12}$`).MatchString(m.Version) {
		t.Fatalf("made %s of %s; want a snapshot of HEAD %s", m.Version, m.Commit, head)
	}
	kinds := map[string][]release.Artifact{}
	for _, a := range m.Artifacts {
		kinds[a.Kind] = append(kinds[a.Kind], a)
	}
	checkChecksums(t, c.Out, m)
	bins := checkArchives(t, c, m, kinds["archive"], host)
	checkSBOM(t, c.Out, m, kinds["sbom"])
	checkImage(t, c.Out, m, kinds["image"], bins)
	checkNPM(t, c.Out, m, kinds["npm"])
	checkWheel(t, c.Out, m, kinds["wheel"])
}

func checkChecksums(t *testing.T, out string, m *release.Manifest) {
	f, err := os.Open(filepath.Join(out, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := 0
	for sc := bufio.NewScanner(f); sc.Scan(); listed++ {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		b, err := os.ReadFile(filepath.Join(out, name))
		h := sha256.Sum256(b)
		if !ok || err != nil || hex.EncodeToString(h[:]) != sum {
			t.Errorf("checksums.txt: %q does not hold (%v)", sc.Text(), err)
		}
	}
	if listed != len(m.Artifacts) {
		t.Errorf("checksums.txt lists %d files, %d were made", listed, len(m.Artifacts))
	}
}

// checkArchives opens each archive, checks its binary is of its platform
// and runs this machine's; it returns the linux binaries by arch.
func checkArchives(t *testing.T, c release.Config, m *release.Manifest, archives []release.Artifact, host release.Target) map[string][]byte {
	if len(archives) != len(c.Targets) {
		t.Fatalf("%d archives for %d targets", len(archives), len(c.Targets))
	}
	bins := map[string][]byte{}
	for _, a := range archives {
		files := untarGz(t, filepath.Join(c.Out, a.Name))
		bin := files["sessionlog"]
		if files["README.md"] == nil || files["CHANGELOG.md"] == nil || bin == nil {
			t.Fatalf("%s holds %d files, not the binary, README.md and CHANGELOG.md", a.Name, len(files))
		}
		if got := platformOf(t, bin); got != a.Target {
			t.Errorf("%s: the binary is for %s", a.Name, got)
		}
		if a.Target.OS == "linux" {
			bins[a.Target.Arch] = bin
		}
		if a.Target != host {
			continue
		}
		exe := filepath.Join(t.TempDir(), "sessionlog")
		os.WriteFile(exe, bin, 0o755)
		out, err := exec.Command(exe, "version", "-json").Output()
		var v struct{ Version, Commit string }
		if err != nil || json.Unmarshal(out, &v) != nil || v.Version != m.Version || v.Commit != m.Commit {
			t.Errorf("%s: sessionlog version says %s (%v); want %s of %s", a.Name, out, err, m.Version, m.Commit)
		}
	}
	return bins
}

func platformOf(t *testing.T, bin []byte) release.Target {
	r := strings.NewReader(string(bin))
	if f, err := elf.NewFile(r); err == nil {
		switch f.Machine {
		case elf.EM_X86_64:
			return release.Target{OS: "linux", Arch: "amd64"}
		case elf.EM_AARCH64:
			return release.Target{OS: "linux", Arch: "arm64"}
		}
	}
	if f, err := macho.NewFile(r); err == nil {
		switch f.Cpu {
		case macho.CpuAmd64:
			return release.Target{OS: "darwin", Arch: "amd64"}
		case macho.CpuArm64:
			return release.Target{OS: "darwin", Arch: "arm64"}
		}
	}
	return release.Target{OS: "unknown"}
}

func checkSBOM(t *testing.T, out string, m *release.Manifest, sboms []release.Artifact) {
	if len(sboms) != 1 {
		t.Fatalf("%d SBOMs", len(sboms))
	}
	f, err := os.Open(filepath.Join(out, sboms[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatal(err)
	}
	if bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Version != m.Version || bom.Components == nil {
		t.Fatalf("the SBOM does not describe sessionlog %s", m.Version)
	}
	// The required dependencies, at go.mod's versions.
	gomod, _ := os.ReadFile("../go.mod")
	want := map[string]string{}
	for _, mod := range []string{"github.com/nats-io/nats-server/v2", "github.com/nats-io/nats.go", "github.com/vmihailenco/msgpack/v5", "go.opentelemetry.io/otel"} {
		if v := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + ` (v\S+)`).FindSubmatch(gomod); v != nil {
			want[mod] = string(v[1])
		}
	}
	for _, comp := range *bom.Components {
		if v, ok := want[comp.Name]; ok && comp.Version == v && comp.PackageURL == "pkg:golang/"+comp.Name+"@"+v {
			delete(want, comp.Name)
		}
	}
	if len(want) != 0 {
		t.Errorf("the SBOM lacks %v", want)
	}
}

func checkImage(t *testing.T, out string, m *release.Manifest, images []release.Artifact, bins map[string][]byte) {
	if len(images) != 1 {
		t.Fatalf("%d images", len(images))
	}
	dir := t.TempDir()
	untar(t, filepath.Join(out, images[0].Name), dir)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != len(bins) {
		t.Fatalf("the image index holds %d images (%v); %d linux binaries were built", len(im.Manifests), err, len(bins))
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		_, p4222 := cf.Config.ExposedPorts["4222/tcp"]
		_, data := cf.Config.Volumes["/data"]
		if cf.Architecture != d.Platform.Architecture || strings.Join(cf.Config.Entrypoint, " ") != "/usr/local/bin/sessionlog" || !p4222 || !data ||
			cf.Config.Labels["org.opencontainers.image.revision"] != m.Commit {
			t.Errorf("%s: config %+v is not deploy/Dockerfile's runtime stage of %s", d.Platform.Architecture, cf.Config, m.Commit)
		}
		layers, _ := img.Layers()
		if len(layers) != 1 {
			t.Fatalf("%d layers", len(layers))
		}
		rc, _ := layers[0].Uncompressed()
		files := readTar(t, rc)
		rc.Close()
		if got := files["usr/local/bin/sessionlog"]; string(got) != string(bins[d.Platform.Architecture]) {
			t.Errorf("%s: the image's binary (%d bytes) is not the archive's", d.Platform.Architecture, len(got))
		}
	}
}

func checkNPM(t *testing.T, out string, m *release.Manifest, tgz []release.Artifact) {
	if len(tgz) != 1 {
		t.Fatalf("%d npm tarballs", len(tgz))
	}
	files := untarGz(t, filepath.Join(out, tgz[0].Name))
	var pkg struct{ Name, Version string }
	json.Unmarshal(files["package/package.json"], &pkg)
	if pkg.Name != "@sessionlog/client" || "v"+pkg.Version != m.Version || files["package/src/index.js"] == nil {
		t.Errorf("npm tarball: %s %s, index.js %d bytes; want @sessionlog/client %s", pkg.Name, pkg.Version, len(files["package/src/index.js"]), m.Version)
	}
}

func checkWheel(t *testing.T, out string, m *release.Manifest, wheels []release.Artifact) {
	if len(wheels) != 1 {
		t.Fatalf("%d wheels", len(wheels))
	}
	z, err := zip.OpenReader(filepath.Join(out, wheels[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	want := strings.TrimPrefix(regexp.MustCompile(`-snapshot.*`).ReplaceAllString(m.Version, ".dev0"), "v")
	var version string
	var init bool
	for _, f := range z.File {
		init = init || f.Name == "sessionlog/__init__.py"
		if strings.HasSuffix(f.Name, ".dist-info/METADATA") {
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			if v := regexp.MustCompile(`(?m)^Version: (\S+)`).FindSubmatch(b); v != nil {
				version = string(v[1])
			}
		}
	}
	if version != want || !init {
		t.Errorf("wheel %s: version %q, sessionlog/__init__.py %t; want %s", wheels[0].Name, version, init, want)
	}
}

// A release is made from its tag only: another version, or changes not
// committed, are refused before anything is built.
func TestReleaseNeedsItsTag(t *testing.T) {
	c := release.DefaultConfig("..")
	c.Out = filepath.Join(t.TempDir(), "dist")
	c.Version = "v999.0.0"
	if _, err := release.Build(context.Background(), c); !errors.Is(err, release.ErrConfig) || !strings.Contains(err.Error(), "not tagged v999.0.0") {
		t.Fatalf("a version HEAD is not tagged with: %v", err)
	}
	for _, bad := range []release.Config{{Root: "..", Out: c.Out, Version: "1.2", Targets: release.Targets},
		{Root: "..", Out: c.Out, Targets: release.Targets},
		{Root: "..", Out: c.Out, Snapshot: true, Targets: []release.Target{{OS: "plan9", Arch: "386"}}}} {
		if err := bad.Validate(); !errors.Is(err, release.ErrConfig) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

func untarGz(t *testing.T, path string) map[string][]byte {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return readTar(t, gz)
}

func readTar(t *testing.T, r io.Reader) map[string][]byte {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[h.Name] = b
		}
	}
}

func untar(t *testing.T, path, dir string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, b := range readTar(t, f) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
