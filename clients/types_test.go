package clients

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcore/sessionlog/api"
	"github.com/agentcore/sessionlog/session"
)

// typescriptPackage is the TypeScript the declarations are checked with.
const typescriptPackage = "typescript@7.0.2"

// nodeTypesPackage are the declarations of the Node the client supports
// (engines: >=22), which a user of the client on Node compiles against.
const nodeTypesPackage = "@types/node@22"

// The TypeScript declarations are checked as their users check them: a
// program using every call through the declared reply types
// (typescript/test-types/usage.ts), compiled by tsc --noEmit in strict mode
// in an application that installed the client and its peers from npm,
// declarations included (skipLibCheck off).
func TestTypeScriptDeclarations(t *testing.T) {
	packages := append([]string{typescriptPackage, langGraphPackages[1], langGraphPackages[2], nodeTypesPackage}, agentsPackages...)
	app := clientApp(t, ".tsc-test", "TypeScript declarations", packages...)
	for _, f := range []string{"usage.ts", "tsconfig.json"} {
		data, err := os.ReadFile(filepath.Join("typescript", "test-types", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(app, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tsc := exec.CommandContext(ctx, filepath.Join(app, "node_modules", ".bin", "tsc"), "--noEmit", "-p", ".")
	tsc.Dir = app
	if out, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("tsc --noEmit over the declarations and usage.ts: %v\n%s", err, out)
	}
}

// tsInterface returns the members of interface name in a declaration
// file: each name, and whether it is optional.
func tsInterface(t *testing.T, src, name string) map[string]bool {
	t.Helper()
	m := regexp.MustCompile(`(?s)export interface ` + name + ` \{(.*?)\n?\}\n`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("index.d.ts declares no interface %s", name)
	}
	body := regexp.MustCompile(`/\*\*.*?\*/`).ReplaceAllString(m[1], "")
	out := map[string]bool{}
	for _, f := range regexp.MustCompile(`(?:^|[;{\n])\s*(\$?\w+)(\??):`).FindAllStringSubmatch(body, -1) {
		out[f[1]] = f[2] == "?"
	}
	return out
}

// pyTypedDict returns the keys of TypedDict name in a Python module: each
// name, and whether it may be left out. Keys a reply always has are
// declared in _<name>Required, the others in <name>(..., total=False).
func pyTypedDict(t *testing.T, src, name string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	body := func(header string) (string, bool) {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(header) + `\n((?:    .*\n|\n)*)`).FindStringSubmatch(src)
		if m == nil {
			return "", false
		}
		return m[1], true
	}
	keys := func(b string, optional bool) {
		for _, f := range regexp.MustCompile(`(?m)^    (\w+): `).FindAllStringSubmatch(b, -1) {
			out[f[1]] = optional
		}
	}
	switch {
	case strings.Contains(src, "class _"+name+"Required(TypedDict):"):
		req, _ := body("class _" + name + "Required(TypedDict):")
		keys(req, false)
		opt, ok := body("class " + name + "(_" + name + "Required, total=False):")
		if !ok {
			t.Fatalf("types.py: _%sRequired without %s(_%sRequired, total=False)", name, name, name)
		}
		keys(opt, true)
	default:
		if b, ok := body("class " + name + "(TypedDict):"); ok {
			keys(b, false)
		} else if b, ok := body("class " + name + "(TypedDict, total=False):"); ok {
			keys(b, true)
		} else {
			t.Fatalf("types.py declares no TypedDict %s", name)
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// The replies as both clients declare them are the protocol's: the same
// members, optional where the service may leave one out (omitempty,
// omitzero). A member added to a reply in api and not to the clients'
// types (or the other way) fails here.
func TestReplyTypesMatchTheProtocol(t *testing.T) {
	ts, err := os.ReadFile(filepath.Join("typescript", "src", "index.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	py, err := os.ReadFile(filepath.Join("python", "src", "sessionlog", "types.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name string
		v    any
	}{
		{"Listing", session.Listing{}}, {"SessionReply", api.SessionReply{}}, {"DeletedReply", api.DeletedReply{}},
		{"LabelReply", api.LabelReply{}}, {"AppendReply", api.AppendReply{}}, {"Appended", api.Appended{}},
		{"ContextReply", api.ContextReply{}}, {"ModelReply", api.ModelReply{}}, {"Apart", api.Apart{}},
		{"ListReply", api.ListReply{}}, {"TreeReply", api.TreeReply{}}, {"TreeNode", api.TreeNode{}},
		{"GetReply", api.GetReply{}}, {"EntriesReply", api.EntriesReply{}}, {"StatsReply", api.StatsReply{}},
		{"UsageReply", api.UsageReply{}}, {"UsageDay", api.UsageDay{}}, {"WaitReply", api.WaitReply{}},
		{"BlobReply", api.BlobReply{}}, {"SearchReply", api.SearchReply{}}, {"SearchHit", api.SearchHit{}},
		{"UsageRow", api.UsageRow{}}, {"UsageReport", api.UsageReport{}},
	} {
		want := jsonMembers(reflect.TypeOf(r.v))
		for _, c := range []struct {
			lang string
			got  map[string]bool
		}{
			{"TypeScript", tsInterface(t, string(ts), r.name)},
			{"Python", pyTypedDict(t, string(py), r.name)},
		} {
			for _, k := range sortedKeys(want) {
				opt, ok := c.got[k]
				switch {
				case !ok:
					t.Errorf("%s %s has no member %q, which the protocol's reply has", c.lang, r.name, k)
				case opt != want[k]:
					t.Errorf("%s %s: member %q optional=%v, the protocol's optional=%v", c.lang, r.name, k, opt, want[k])
				}
			}
			for _, k := range sortedKeys(c.got) {
				if _, ok := want[k]; !ok {
					t.Errorf("%s %s has a member %q the protocol's reply has not", c.lang, r.name, k)
				}
			}
		}
	}
}

// jsonMembers are the members of a Go struct's JSON, and whether each may
// be left out.
func jsonMembers(rt reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") || (f.Anonymous && name == "") {
			maps.Copy(out, jsonMembers(f.Type))
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
	}
	return out
}

// The Python client passes mypy --strict, Debian's mypy (as CI installs
// it), with its replies typed (python/src/sessionlog/types.py): a user
// checking their program with mypy sees what each call returns.
func TestPythonTypes(t *testing.T) {
	mypy, err := exec.LookPath("mypy")
	if err != nil {
		skipPeer(t, "mypy is not installed (Debian: apt-get install mypy): the Python client's types are not checked")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mypy, "--strict", "--no-incremental", filepath.Join("src", "sessionlog"))
	cmd.Dir = "python"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mypy --strict src/sessionlog: %v\n%s", err, out)
	}
}
