package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncFields is the ceiling on function-typed exported fields of
// exported structs in our production packages (test helpers aside), as
// measured when loop.Deps became seven named seams: 40, down from 56 (and
// 64 at the design review). A seam is a named interface (loop.Crew,
// loop.Clock, llm.Models, loop.Kicker, projections.Freshness), not one
// more func field; docs/architecture.md lists the fields left and why.
// Lower it when you remove one.
const maxFuncFields = 40

// TestSeamsFuncFieldsDoNotGrow: no function-typed config field is added
// to our packages; a new edge is a method of a named seam.
func TestSeamsFuncFieldsDoNotGrow(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := listSources(t, root)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: is this the module root? %s", len(pkgs), root)
	}
	found, err := funcFields(module, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > maxFuncFields {
		t.Fatalf("%d function-typed exported fields, more than %d: make the new one a method of a named seam (loop.Crew, loop.Clock, llm.Models, loop.Kicker, projections.Freshness) or an interface of its own:\n%s",
			len(found), maxFuncFields, strings.Join(found, "\n"))
	}
	t.Logf("%d function-typed exported fields (ceiling %d)", len(found), maxFuncFields)
}

// TestSeamsFuncFieldsCheckCounts: over a module made for it, the count
// takes exported func fields of exported structs (one per name) and
// leaves out interfaces, named function types, unexported fields and
// structs, tests and test-helper packages, so the test above can fail.
func TestSeamsFuncFieldsCheckCounts(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.24\n",
		"a/a.go": `package a

import "time"

type Kicker interface{ Kick(string) }
type KickFunc func(string)

type Config struct {
	Clock      func() time.Time
	Get, Put   func(string) error
	Kick       Kicker
	Named      KickFunc
	hidden     func()
	Hours      int
}

type inner struct{ Run func() }
`,
		"a/a_test.go":       "package a\n\ntype T struct{ F func() }\n",
		"b/btest/helper.go": "package btest\n\ntype H struct{ F func() }\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, err := funcFields("example.com/m", listSources(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.Config.Clock", "a.Config.Get", "a.Config.Put"}
	if strings.Join(found, " ") != strings.Join(want, " ") {
		t.Fatalf("found %v, want %v", found, want)
	}
}

// funcFields lists, sorted, every exported field of function type of an
// exported struct type in the production files of module mod's packages,
// test helpers (packages ending in "test") aside, as pkg.Type.Field.
func funcFields(mod string, pkgs []source) ([]string, error) {
	var out []string
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, mod+"/")
		if !ok || strings.HasSuffix(rel, "test") {
			continue
		}
		fset := token.NewFileSet()
		for _, name := range append(append([]string(nil), p.GoFiles...), p.CgoFiles...) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE {
					continue
				}
				for _, s := range g.Specs {
					ts := s.(*ast.TypeSpec)
					st, ok := ts.Type.(*ast.StructType)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					for _, fl := range st.Fields.List {
						if _, fn := fl.Type.(*ast.FuncType); !fn {
							continue
						}
						for _, n := range fl.Names {
							if n.IsExported() {
								out = append(out, fmt.Sprintf("%s.%s.%s", rel, ts.Name.Name, n.Name))
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
