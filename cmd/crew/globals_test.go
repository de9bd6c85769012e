package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// sharedState are the package-level variables of ours that still hold
// mutable state, each with why it may (docs/PATTERNS.md, "Process-wide
// state"). A new one fails TestTopLevelVarsHoldNoMutableState: make it a
// field of what owns it (the App, the log, the Convs) instead.
var sharedState = map[string]string{
	"events.registry":  "the event vocabulary, filled by register from init (types.go) before main; read-only after",
	"schemas.compiled": "compiled embedded schemas by path: a memo of immutable data",
	"schemas.mu":       "guards schemas.compiled",
	"tools.compiled":   "compiled shell and browser patterns by text: a memo of immutable data, bounded (patternCacheMax, least recently used let go)",
}

// TestTopLevelVarsHoldNoMutableState: no package of ours (test helpers
// aside) keeps mutable state in a package-level variable but those
// sharedState lists: a value two homes or two tests of one process would
// share belongs to what owns it.
func TestTopLevelVarsHoldNoMutableState(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := listSources(t, root)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: is this the module root? %s", len(pkgs), root)
	}
	found, err := mutableVars(module, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, v := range found {
		seen[v.name] = true
		if _, ok := sharedState[v.name]; !ok {
			t.Errorf("%s holds mutable state (%s): make it a field of what owns it, not a package-level variable", v.name, v.why)
		}
	}
	for name := range sharedState {
		if !seen[name] {
			t.Errorf("%s is listed in sharedState but holds no mutable state now: take it off the list (and docs/PATTERNS.md)", name)
		}
	}
}

// TestTopLevelVarsCheckCatchesState: over a module made for it, the check
// names a map written by a function, a mutex, an atomic, a variable made
// by a constructor and one whose address is handed out, and spares
// sentinel errors, compiled patterns, once-caches, tables never written,
// variables set in init and test helpers, so the test above can fail.
func TestTopLevelVarsCheckCatchesState(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.24\n",
		"a/a.go": `package a

import (
	"errors"
	"regexp"
	"sync"
	"sync/atomic"
)

type Thing struct{ n int }

func NewThing() *Thing { return &Thing{} }

var (
	ErrGone = errors.New("gone")
	word    = regexp.MustCompile("w+")
	table   = map[string]int{"a": 1}
	once    = sync.OnceValue(func() int { return 1 })
	kinds   = []string{"x"}
	setAtInit string

	cache = map[string]int{}
	mu    sync.Mutex
	count atomic.Int64
	thing = NewThing()
	shared int
)

func init() { setAtInit = "y" }

func Put(k string) int {
	mu.Lock()
	defer mu.Unlock()
	cache[k] = table[k] + once() + len(kinds) + len(word.String()) + len(setAtInit)
	count.Add(1)
	return thing.n
}

func Ptr() *int { return &shared }
`,
		"a/a_test.go":     "package a\n\nvar testOnly = map[string]int{}\n\nfunc init() { testOnly[\"x\"] = 1 }\n",
		"helpertest/h.go": "package helpertest\n\nvar calls int\n\nfunc Call() { calls++ }\n",
	}
	for name, text := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, err := mutableVars("example.com/m", listSources(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range found {
		got = append(got, v.name)
	}
	want := []string{"a.cache", "a.count", "a.mu", "a.shared", "a.thing"}
	if !slices.Equal(got, want) {
		t.Errorf("found %v, want %v (%+v)", got, want, found)
	}
}

// mutableVar is a package-level variable holding mutable state: name is
// "<package dir>.<var>", why says how the check knows.
type mutableVar struct{ name, why string }

// immutableCalls make values nobody changes: sentinel errors, compiled
// patterns and templates, replacers, once-caches, a Markdown renderer and
// an HTML converter (both safe for concurrent use).
var immutableCalls = map[string]bool{
	"errors.New": true, "fmt.Errorf": true, "fmt.Sprintf": true, "regexp.MustCompile": true,
	"template.Must": true, "strings.NewReplacer": true, "sync.OnceValue": true,
	"sync.OnceValues": true, "sync.OnceFunc": true, "goldmark.New": true, "converter.NewConverter": true,
}

// stateTypes exist to be changed.
var stateTypes = []string{"sync.Mutex", "sync.RWMutex", "sync.Map", "sync.Pool", "sync.WaitGroup", "sync.Cond", "atomic."}

// mutableVars lists, sorted, the package-level variables of module mod's
// packages (test helper packages, named …test, aside) that hold mutable
// state: of a type that exists to be changed (a mutex, an atomic, a
// sync.Map), made by a call that is not known to make an immutable value,
// or written outside init (assigned, incremented, deleted from, cleared,
// its address taken). Only the files of the normal build count.
func mutableVars(mod string, pkgs []source) ([]mutableVar, error) {
	var out []mutableVar
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, mod+"/")
		if !ok || strings.HasSuffix(rel, "test") {
			continue
		}
		fset := token.NewFileSet()
		var files []*ast.File
		for _, name := range append(append([]string(nil), p.GoFiles...), p.CgoFiles...) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
		types := map[string]bool{} // the package's type names: T(x) converts
		for _, f := range files {
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
					for _, s := range g.Specs {
						types[s.(*ast.TypeSpec).Name.Name] = true
					}
				}
			}
		}
		why := map[string]string{} // var → why it is mutable, "" if not (yet)
		specs := map[any]bool{}    // the package-level var specs
		for _, f := range files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					specs[vs] = true
					for i, n := range vs.Names {
						if n.Name == "_" {
							continue
						}
						w := ""
						if t := exprText(vs.Type); isStateType(t) {
							w = "of type " + t
						}
						if i < len(vs.Values) && w == "" {
							w = madeMutable(vs.Values[i], types)
						}
						why[n.Name] = w
					}
				}
			}
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				if fd, ok := n.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
					return false // runs once, before main
				}
				mark := func(e ast.Expr, how string, at token.Pos) {
					id := rootIdent(e)
					if id == nil || (id.Obj != nil && !specs[id.Obj.Decl]) {
						return // not a package-level variable
					}
					if w, ok := why[id.Name]; ok && w == "" {
						pos := fset.Position(at)
						why[id.Name] = fmt.Sprintf("%s at %s:%d", how, filepath.Base(pos.Filename), pos.Line)
					}
				}
				switch x := n.(type) {
				case *ast.AssignStmt:
					if x.Tok != token.DEFINE {
						for _, l := range x.Lhs {
							mark(l, "assigned", x.Pos())
						}
					}
				case *ast.IncDecStmt:
					mark(x.X, "changed", x.Pos())
				case *ast.UnaryExpr:
					if x.Op == token.AND {
						mark(x.X, "its address taken", x.Pos())
					}
				case *ast.CallExpr:
					if id, ok := x.Fun.(*ast.Ident); ok && (id.Name == "delete" || id.Name == "clear") && len(x.Args) > 0 {
						mark(x.Args[0], "given to "+id.Name, x.Pos())
					}
				}
				return true
			})
		}
		for name, w := range why {
			if w != "" {
				out = append(out, mutableVar{name: rel + "." + name, why: w})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func isStateType(t string) bool {
	return slices.ContainsFunc(stateTypes, func(s string) bool { return strings.Contains(t, s) })
}

// madeMutable says why an initializer makes mutable state, "" if it does
// not: a composite of a state type, or a call not known to make an
// immutable value (conversions and function literals aside).
func madeMutable(e ast.Expr, types map[string]bool) string {
	w := ""
	ast.Inspect(e, func(n ast.Node) bool {
		if w != "" {
			return false
		}
		switch x := n.(type) {
		case *ast.FuncLit:
			return false // a function value: its body runs later
		case *ast.CompositeLit:
			if t := exprText(x.Type); isStateType(t) {
				w = "made as " + t
			}
		case *ast.CallExpr:
			fn := exprText(x.Fun)
			switch {
			case immutableCalls[fn]:
				return false
			case fn == "" || types[fn] || isConversion(x):
			default:
				w = "made by " + fn + "()"
			}
		}
		return true
	})
	return w
}

// isConversion: T(x) for a built-in or a composite type, or one of the
// other packages' types our variables convert to.
func isConversion(c *ast.CallExpr) bool {
	switch f := c.Fun.(type) {
	case *ast.ArrayType, *ast.MapType, *ast.InterfaceType, *ast.FuncType, *ast.ChanType:
		return true
	case *ast.Ident:
		return slices.Contains([]string{"string", "int", "int64", "uint16", "uint32", "uint64", "byte", "rune", "float64", "bool", "any"}, f.Name)
	case *ast.SelectorExpr:
		return slices.Contains([]string{"RawMessage", "Duration", "FileMode", "Scope"}, f.Sel.Name)
	}
	return false
}

func exprText(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprText(x.X) + "." + x.Sel.Name
	case *ast.StarExpr:
		return "*" + exprText(x.X)
	case *ast.IndexExpr:
		return exprText(x.X) + "[" + exprText(x.Index) + "]"
	case *ast.ArrayType:
		return "[]" + exprText(x.Elt)
	case *ast.MapType:
		return "map[" + exprText(x.Key) + "]" + exprText(x.Value)
	}
	return ""
}

// rootIdent is the variable an expression writes into: x in x, x[k], x.f,
// *x, (x).
func rootIdent(e ast.Expr) *ast.Ident {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return x
		case *ast.IndexExpr:
			e = x.X
		case *ast.SelectorExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		default:
			return nil
		}
	}
}
