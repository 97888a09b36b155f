package release

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// writeSBOM writes a CycloneDX SBOM of the binary at bin: the modules Go
// recorded in it (what was linked, not what go.mod lists), each with its
// version, package URL and go.sum hash, and the Go toolchain.
func writeSBOM(c Config, v versions, m *Manifest, bin string) error {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("release: the build info of %s: %w", bin, err)
	}
	purl := func(path, version string) string { return "pkg:golang/" + path + "@" + version }
	main := cdx.Component{BOMRef: purl(bi.Main.Path, v.tag), Type: cdx.ComponentTypeApplication, Name: "sessionlog",
		Version: v.tag, PackageURL: purl(bi.Main.Path, v.tag),
		Properties: &[]cdx.Property{{Name: "sessionlog:commit", Value: m.Commit}, {Name: "sessionlog:go", Value: bi.GoVersion}}}
	var comps []cdx.Component
	var refs []string
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		comp := cdx.Component{BOMRef: purl(d.Path, d.Version), Type: cdx.ComponentTypeLibrary, Name: d.Path, Version: d.Version, PackageURL: purl(d.Path, d.Version)}
		if d.Sum != "" {
			comp.Properties = &[]cdx.Property{{Name: "go:sum", Value: d.Sum}}
		}
		comps = append(comps, comp)
		refs = append(refs, comp.BOMRef)
	}
	comps = append(comps, cdx.Component{BOMRef: "pkg:golang/std@" + bi.GoVersion, Type: cdx.ComponentTypeLibrary, Name: "std",
		Version: strings.TrimPrefix(bi.GoVersion, "go"), PackageURL: "pkg:golang/std@" + bi.GoVersion})
	refs = append(refs, "pkg:golang/std@"+bi.GoVersion)
	bom := cdx.NewBOM()
	bom.SerialNumber = "urn:uuid:" + uuidOf(m.Commit+v.tag)
	bom.Metadata = &cdx.Metadata{Timestamp: m.Time.Format(time.RFC3339), Component: &main}
	bom.Components = &comps
	bom.Dependencies = &[]cdx.Dependency{{Ref: main.BOMRef, Dependencies: &refs}}
	name := fmt.Sprintf("sessionlog_%s.cdx.json", v.number())
	f, err := os.Create(filepath.Join(c.Out, name))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON).SetPretty(true).EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return fmt.Errorf("release: SBOM: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return m.add(c, name, "sbom", Target{})
}

// uuidOf is a version-5-shaped UUID of s: the same release gets the same
// serial number.
func uuidOf(s string) string {
	h := sha256Hex(s)
	return fmt.Sprintf("%s-%s-5%s-a%s-%s", h[0:8], h[8:12], h[13:16], h[17:20], h[20:32])
}
