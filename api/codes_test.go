package api_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentcore/sessionlog/api"
)

// One list of error codes: every Code constant is in api.Codes, and the
// TypeScript client's errors, the Python client's and docs/protocol.md
// name exactly those.
func TestOneListOfErrorCodes(t *testing.T) {
	var want []string
	for _, c := range api.Codes {
		want = append(want, string(c))
	}
	slices.Sort(want)
	if len(slices.Compact(slices.Clone(want))) != len(want) {
		t.Fatalf("api.Codes names a code twice: %v", want)
	}
	// The constants of type Code in the package's source.
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Code" {
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok {
						s, _ := strconv.Unquote(lit.Value)
						consts = append(consts, s)
					}
				}
			}
		}
		return true
	})
	slices.Sort(consts)
	if !slices.Equal(consts, want) {
		t.Errorf("the Code constants %v, api.Codes %v", consts, want)
	}

	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	between := func(s, from, to string) string {
		_, rest, ok := strings.Cut(s, from)
		if !ok {
			t.Fatalf("%q not found", from)
		}
		body, _, _ := strings.Cut(rest, to)
		return body
	}
	names := func(re, s string) []string {
		var out []string
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	for name, got := range map[string][]string{
		"clients/typescript/src/errors.js":        names(`(?m)^\s+(\w+): \w+Error,$`, between(read("../clients/typescript/src/errors.js"), "errorClasses = {", "};")),
		"clients/python/src/sessionlog/errors.py": names(`"(\w+)": \w+Error`, between(read("../clients/python/src/sessionlog/errors.py"), "CLASSES", "}")),
		"docs/protocol.md":                        names("`(\\w+)`(?:,| \\(|\\.)", between(read("../docs/protocol.md"), "The codes:", "The Go")),
	} {
		if !slices.Equal(got, want) {
			t.Errorf("%s names %v, api.Codes %v", name, got, want)
		}
	}
}
