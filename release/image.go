package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// runtimeStage is what deploy/Dockerfile's last stage says of the
// running container: where the binary goes, the ports, volumes and
// entrypoint.
type runtimeStage struct {
	binary     string // the path COPY puts /sessionlog at
	ports      []string
	volumes    []string
	entrypoint []string
}

// readDockerfile reads the last stage of the Dockerfile at path.
func readDockerfile(path string) (runtimeStage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return runtimeStage{}, err
	}
	var st runtimeStage
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			st = runtimeStage{} // a later stage: what counts is the last
		case "COPY":
			if len(f) == 4 && strings.HasPrefix(f[1], "--from=") && f[2] == "/sessionlog" {
				st.binary = f[3]
			}
		case "EXPOSE":
			for _, p := range f[1:] {
				if !strings.Contains(p, "/") {
					p += "/tcp"
				}
				st.ports = append(st.ports, p)
			}
		case "VOLUME":
			st.volumes = append(st.volumes, f[1:]...)
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(sc.Text(), f[0]))), &st.entrypoint); err != nil {
				return st, fmt.Errorf("release: %s: ENTRYPOINT is not a JSON array: %w", path, err)
			}
		}
	}
	if st.binary == "" || len(st.entrypoint) == 0 {
		return st, fmt.Errorf("release: %s: its last stage copies no /sessionlog, or has no ENTRYPOINT", path)
	}
	return st, nil
}

// buildImage writes the container image of the release: an OCI image
// index with an image for each linux target, configured as
// deploy/Dockerfile's runtime stage. Its base is empty, not distroless's
// static image (which a build machine without a registry cannot pull):
// the layer carries what sessionlog needs of it, the CA certificates and
// a non-root user's passwd line. The index is written as an OCI layout
// and archived (podman load, skopeo copy oci-archive:…, docker load of
// Docker 25 and later).
func buildImage(c Config, v versions, m *Manifest, bins map[Target]string) error {
	st, err := readDockerfile(filepath.Join(c.Root, "deploy", "Dockerfile"))
	if err != nil {
		return err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	made := 0
	for _, t := range c.Targets {
		if t.OS != "linux" {
			continue
		}
		img, err := image(st, v, m, t, bins[t])
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: t.OS, Architecture: t.Arch}}})
		made++
	}
	if made == 0 {
		return nil // no linux target built
	}
	dir := filepath.Join(c.Out, ".build", "image")
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("release: image: %w", err)
	}
	name := fmt.Sprintf("sessionlog_%s_oci.tar", v.number())
	if err := tarDir(filepath.Join(c.Out, name), dir, m); err != nil {
		return err
	}
	return m.add(c, name, "image", Target{})
}

func image(st runtimeStage, v versions, m *Manifest, t Target, bin string) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return rootfs(st, bin, m) }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = t.OS, t.Arch
	cf.Created = v1.Time{Time: m.Time}
	cf.Config.Entrypoint = st.entrypoint
	cf.Config.User = "65532:65532" // distroless's nonroot
	cf.Config.ExposedPorts = map[string]struct{}{}
	for _, p := range st.ports {
		cf.Config.ExposedPorts[p] = struct{}{}
	}
	cf.Config.Volumes = map[string]struct{}{}
	for _, vol := range st.volumes {
		cf.Config.Volumes[vol] = struct{}{}
	}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title": "sessionlog", "org.opencontainers.image.version": v.tag,
		"org.opencontainers.image.revision": m.Commit, "org.opencontainers.image.created": m.Time.Format("2006-01-02T15:04:05Z"),
	}
	return mutate.ConfigFile(img, cf)
}

// rootfs is the image's one layer: the binary where the Dockerfile puts
// it, the data volume owned by the non-root user, a passwd naming it, and
// the build machine's CA certificates when it has them.
func rootfs(st runtimeStage, bin string, m *Manifest) (io.ReadCloser, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, uid int) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, Uid: uid, Gid: uid, ModTime: m.Time})
	}
	file := func(name string, mode int64, data []byte) {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: m.Time})
		tw.Write(data)
	}
	for _, d := range []string{"etc", "etc/ssl", "etc/ssl/certs", "tmp", "usr", "usr/local", "usr/local/bin"} {
		dir(d, 0)
	}
	for _, vol := range st.volumes {
		dir(strings.TrimPrefix(vol, "/"), 65532)
	}
	file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
	file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n"))
	if certs, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		file("etc/ssl/certs/ca-certificates.crt", 0o644, certs)
	}
	file(strings.TrimPrefix(st.binary, "/"), 0o755, exe)
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}

// tarDir archives the directory dir (an OCI layout) as path.
func tarDir(path, dir string, m *Manifest) error {
	files := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := filepath.ToSlash(rel)
		if info.IsDir() {
			name += "/"
		}
		files[name] = p
		return nil
	})
	if err != nil {
		return fmt.Errorf("release: archive the image: %w", err)
	}
	return writeArchive(path, files, m)
}
