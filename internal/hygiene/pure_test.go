package hygiene

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ioImports are packages whose use means I/O or the machine's state.
var ioImports = map[string]bool{
	"os": true, "os/exec": true, "io/fs": true, "io/ioutil": true,
	"net": true, "net/http": true, "syscall": true, "path/filepath": true,
	"crypto/rand": true, "math/rand": true, "math/rand/v2": true,
}

// The pure core (session, its kit for backends and codec, not their test
// helpers) does no I/O, starts no goroutines and never reads the clock:
// callers inject what they need, and tests of the core need nothing but
// inputs.
func TestCoreIsPure(t *testing.T) {
	for _, dir := range []string{"session", "session/sessionkit", "codec"} {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			for _, v := range impurities(t, path) {
				t.Errorf("%s", v)
			}
		}
	}
}

// impurities lists what in the file at path is not pure.
func impurities(t *testing.T, path string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	report := func(at token.Pos, what string) {
		out = append(out, fset.Position(at).String()+": "+what)
	}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if ioImports[p] {
			report(im.Pos(), "imports "+p)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n.Pos(), "starts a goroutine")
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" && (n.Sel.Name == "Now" || n.Sel.Name == "Since" || n.Sel.Name == "Until") {
				report(n.Pos(), "reads the clock (time."+n.Sel.Name+")")
			}
		}
		return true
	})
	return out
}
