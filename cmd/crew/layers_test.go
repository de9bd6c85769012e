package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// module is our import path prefix.
const module = "github.com/my-agent-crew/crew"

// theCard is the top level of the repository (the design card): these
// folders and files, nothing else (dot files aside).
var theCard = []string{
	".ci", "README.md", "Taskfile.yml", "cmd", "desktop-helper", "docs", "events", "gateways",
	"go.mod", "go.sum", "loop", "projections", "schemas", "tools", "ui",
}

// arrows is the allowed-arrows block of docs/architecture.md: layer →
// what it may import besides itself ("*" for everything).
type arrows map[string][]string

// readArrows parses the ```arrows block of the architecture doc.
func readArrows(doc io.Reader) (arrows, error) {
	a := arrows{}
	in := false
	sc := bufio.NewScanner(doc)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "```arrows":
			in = true
			continue
		case in && line == "```":
			if len(a) == 0 {
				return nil, errors.New("the arrows block is empty")
			}
			return a, nil
		case !in || line == "":
			continue
		}
		from, to, ok := strings.Cut(line, "->")
		from = strings.TrimSpace(from)
		if !ok || from == "" || strings.Contains(from, " ") {
			return nil, fmt.Errorf("line %d: %q: want \"layer -> imported layers\"", n, line)
		}
		if _, dup := a[from]; dup {
			return nil, fmt.Errorf("line %d: layer %s listed twice", n, from)
		}
		a[from] = strings.Fields(to)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("no ```arrows block")
}

// listed is what `go list -json` says of one package.
type listed struct {
	ImportPath string
	Imports    []string
}

// ours is p relative to the module ("loop/llm"), or false for another
// module's package. Test variants ("loop [loop.test]") and external test
// packages ("loop_test") are the package they test.
func ours(p string) (string, bool) {
	p, _, _ = strings.Cut(p, " ")
	if p == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(p, module+"/")
	if !ok {
		return "", false
	}
	return strings.TrimSuffix(rel, "_test"), true
}

// top is rel's layer: its first folder.
func top(rel string) string {
	t, _, _ := strings.Cut(rel, "/")
	return t
}

// allows reports whether a package of layer from may import rel.
// Within a layer anything goes, except that one gateway imports another
// only when the gateways line names it.
func (a arrows) allows(fromRel, rel string) bool {
	from, to := top(fromRel), top(rel)
	list := a[from]
	if slices.Contains(list, "*") {
		return true
	}
	if from == to && (from != "gateways" || gateway(fromRel) == gateway(rel)) {
		return true
	}
	for _, t := range list {
		if rel == t || strings.HasPrefix(rel, t+"/") {
			if from == "gateways" && to == "gateways" && !strings.Contains(t, "/") {
				continue // "gateways" alone would open every gateway to every other
			}
			return true
		}
	}
	return false
}

// gateway is the gateway rel is part of: "gateways/web" for
// gateways/web/x, "gateways" for the layer's own package.
func gateway(rel string) string {
	parts := strings.SplitN(rel, "/", 3)
	return strings.Join(parts[:min(2, len(parts))], "/")
}

// check returns every import between our packages that a does not
// allow, and every package whose layer a does not know, sorted.
func check(a arrows, pkgs []listed) []string {
	seen := map[string]bool{}
	for _, p := range pkgs {
		from, ok := ours(p.ImportPath)
		if !ok || strings.HasSuffix(p.ImportPath, ".test") {
			continue // another module's, or a generated test main
		}
		if _, known := a[top(from)]; !known {
			seen[fmt.Sprintf("%s: in no layer of the arrows (top folder %q)", from, top(from))] = true
			continue
		}
		for _, imp := range p.Imports {
			rel, ok := ours(imp)
			if !ok || rel == from {
				continue
			}
			if !a.allows(from, rel) {
				seen[fmt.Sprintf("%s → %s: %s may not import %s", from, rel, top(from), rel)] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// goList is `go list -deps -test -json ./...` of the module: every package
// with its production and test imports.
func goList(t *testing.T, root string) []listed {
	t.Helper()
	return goListJSON[listed](t, root, "-deps", "-test", "-json=ImportPath,Imports", "./...")
}

// modulePackages is goList of the module root, refusing a list too short
// to be the module's.
func modulePackages(t *testing.T) []listed {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := goList(t, root)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: is this the module root? %s", len(pkgs), root)
	}
	return pkgs
}

// testVariant says p is test code: a package's test variant, a test binary
// or an external test package.
func testVariant(p listed) bool {
	return strings.Contains(p.ImportPath, " [") || strings.HasSuffix(p.ImportPath, ".test") || strings.HasSuffix(p.ImportPath, "_test")
}

// goListJSON runs go list with args in root and decodes its stream of
// JSON packages into T.
func goListJSON[T any](t *testing.T, root string, args ...string) []T {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []T
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p T
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportsFollowTheAllowedArrows: every import of every package of
// ours, production and test, follows docs/architecture.md's arrows, with
// no exceptions.
func TestImportsFollowTheAllowedArrows(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := readArrows(f)
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	pkgs := goList(t, root)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: is this the module root? %s", len(pkgs), root)
	}
	for _, v := range check(a, pkgs) {
		t.Error(v)
	}
}

// langchaingo is the model library our own model boundary (llm.Model)
// keeps inside loop/llm.
const langchaingo = "github.com/tmc/langchaingo"

// langchaingoOutside names every production package of ours, other than
// loop/llm, that imports langchaingo; test packages may still drive
// loop/llm's internals with its types.
func langchaingoOutside(pkgs []listed) []string {
	var out []string
	for _, p := range pkgs {
		rel, ok := ours(p.ImportPath)
		if !ok || rel == "loop/llm" || testVariant(p) {
			continue // another module's, loop/llm itself, or test code
		}
		for _, imp := range p.Imports {
			if imp == langchaingo || strings.HasPrefix(imp, langchaingo+"/") {
				out = append(out, rel+" imports "+imp+": only loop/llm may (call models through llm.Model)")
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestArrowsKeepLangchaingoInsideLoopLLM: no production package but
// loop/llm imports langchaingo; the rest of the harness calls models
// through llm.Model (docs/architecture.md, "The model boundary").
func TestArrowsKeepLangchaingoInsideLoopLLM(t *testing.T) {
	for _, v := range langchaingoOutside(modulePackages(t)) {
		t.Error(v)
	}
}

// TestArrowsLangchaingoCheckCatchesImporters: the check above fails on a
// production package outside loop/llm importing langchaingo (or one of its
// sub-packages), and leaves loop/llm and test packages alone.
func TestArrowsLangchaingoCheckCatchesImporters(t *testing.T) {
	p := func(path string, imports ...string) listed {
		if !strings.Contains(path, ".") {
			path = module + "/" + path
		}
		return listed{ImportPath: path, Imports: append(imports, "fmt")}
	}
	got := langchaingoOutside([]listed{
		p("loop/llm", langchaingo+"/llms"),                              // the boundary itself
		p(module+"/loop/llm_test [loop/llm.test]", langchaingo+"/llms"), // its tests
		p(module+"/loop [loop.test]", langchaingo+"/llms"),              // a test variant
		p(module+"/loop_test", langchaingo+"/llms"),                     // an external test package
		p("loop", module+"/loop/llm"),                                   // through the boundary: fine
		p("loop/budget", langchaingo+"/llms"),                           // a wrapper reaching past it
		p("cmd/crew/app", langchaingo),                                  // the root package
		p("loop/llm/llmtest", langchaingo+"/llms/openai"),               // a sub-package is not loop/llm
		p("github.com/tmc/langchaingo/llms", "context"),                 // another module's
	})
	want := []string{
		"cmd/crew/app imports github.com/tmc/langchaingo: only loop/llm may (call models through llm.Model)",
		"loop/budget imports github.com/tmc/langchaingo/llms: only loop/llm may (call models through llm.Model)",
		"loop/llm/llmtest imports github.com/tmc/langchaingo/llms/openai: only loop/llm may (call models through llm.Model)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// webImportsOfLoop names every import of a loop package (loop, loop/...)
// by gateways/web's production code: the web gateway reads projections
// and the shapes of events/view, and what it needs of the loop comes in
// through its own interfaces, which cmd/crew/app fills (issue 33). Its
// tests may still drive a real loop.
func webImportsOfLoop(pkgs []listed) []string {
	var out []string
	for _, p := range pkgs {
		rel, ok := ours(p.ImportPath)
		if !ok || (rel != "gateways/web" && !strings.HasPrefix(rel, "gateways/web/")) || testVariant(p) {
			continue // another package, or test code
		}
		for _, imp := range p.Imports {
			if to, ok := ours(imp); ok && top(to) == "loop" {
				out = append(out, rel+" imports "+to+": gateways/web may not import the loop (read projections and events/view)")
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestArrowsKeepTheLoopOutOfTheWebGateway: no production package of
// gateways/web imports a loop package (docs/architecture.md).
func TestArrowsKeepTheLoopOutOfTheWebGateway(t *testing.T) {
	for _, v := range webImportsOfLoop(modulePackages(t)) {
		t.Error(v)
	}
}

// TestArrowsWebLoopCheckCatchesImporters: the check above fails on
// gateways/web (or a package under it) importing loop or a loop
// sub-package, and leaves its tests and the other gateways alone.
func TestArrowsWebLoopCheckCatchesImporters(t *testing.T) {
	p := func(path string, imports ...string) listed {
		for i, imp := range imports {
			imports[i] = module + "/" + imp
		}
		return listed{ImportPath: module + "/" + path, Imports: append(imports, "fmt")}
	}
	got := webImportsOfLoop([]listed{
		p("gateways/web", "events/view", "projections", "gateways/inbound"), // fine
		p("gateways/web", "loop"),                     // the loop itself
		p("gateways/web", "loop/consolidate"),         // a sub-package
		p("gateways/web/x", "loop/team"),              // a package under the gateway
		p("gateways/web [gateways/web.test]", "loop"), // its test variant
		p("gateways/web_test", "loop"),                // its external tests
		p("gateways/inbound", "loop"),                 // another gateway may
		p("gateways/webhook", "loop"),                 // not the web gateway
	})
	want := []string{
		"gateways/web imports loop/consolidate: gateways/web may not import the loop (read projections and events/view)",
		"gateways/web imports loop: gateways/web may not import the loop (read projections and events/view)",
		"gateways/web/x imports loop/team: gateways/web may not import the loop (read projections and events/view)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTopLevelIsTheCard: the repository's top level is the design card's
// (what the root .gitignore names, such as a built /crew, aside).
func TestTopLevelIsTheCard(t *testing.T) {
	entries, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	ignore, err := os.ReadFile("../../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	ignored := strings.Fields(string(ignore))
	var got []string
	for _, e := range entries {
		n := e.Name()
		if (!strings.HasPrefix(n, ".") || n == ".ci") && !slices.Contains(ignored, "/"+n) {
			got = append(got, n)
		}
	}
	if !slices.Equal(got, theCard) {
		t.Errorf("top level:\n%v\nwant the card's:\n%v", got, theCard)
	}
}

// TestArrowCheckerCatchesForbiddenArrows: the checker itself fails on
// what the doc forbids, so the test above can fail.
func TestArrowCheckerCatchesForbiddenArrows(t *testing.T) {
	a, err := readArrows(strings.NewReader("text\n```arrows\ncmd -> *\ngateways -> loop events gateways/inbound\nloop -> events tools\ntools -> events\nevents ->\ndesktop-helper ->\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := func(path string, imports ...string) listed {
		for i, imp := range imports {
			imports[i] = module + "/" + imp
		}
		return listed{ImportPath: module + "/" + path, Imports: append(imports, "fmt", "github.com/tmc/langchaingo/llms")}
	}
	got := check(a, []listed{
		p("cmd/crew", "ui", "gateways/web", "loop"),                                      // cmd → all
		p("loop", "events", "tools/kit", "loop/llm"),                                     // allowed, and within the layer
		p("loop/llm [loop/llm.test]", "loop"),                                            // a test variant, within the layer
		p("loop_test [loop.test]", "gateways/inbound"),                                   // a test arrow the doc forbids
		p("tools/kit", "tools/shell", "loop"),                                            // tools → loop
		p("gateways/web", "gateways/inbound", "loop"),                                    // the named gateway
		p("gateways/web", "gateways/telegram"),                                           // gateway ↔ gateway
		p("gateways/telegram_test", "events/eventstest"),                                 // allowed test helper
		p("events", "schemas"),                                                           // schemas is not on the events line here
		p("memory", "events"),                                                            // a top folder in no layer
		p("desktop-helper", "desktop-helper/wire", "tools"),                              // the helper imports nothing of the server
		{ImportPath: module + "/loop.test", Imports: []string{module + "/gateways/web"}}, // generated main: not ours to check
	})
	want := []string{
		"desktop-helper → tools: desktop-helper may not import tools",
		"events → schemas: events may not import schemas",
		"gateways/web → gateways/telegram: gateways may not import gateways/telegram",
		"loop → gateways/inbound: loop may not import gateways/inbound",
		`memory: in no layer of the arrows (top folder "memory")`,
		"tools/kit → loop: tools may not import loop",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range []string{"no block here\n", "```arrows\n```\n", "```arrows\nloop events\n```\n", "```arrows\nloop ->\nloop -> events\n```\n"} {
		if _, err := readArrows(strings.NewReader(bad)); err == nil {
			t.Errorf("readArrows(%q) accepted a broken block", bad)
		}
	}
}

// TestDesktopHelperImportsNothingOfTheServer: the desktop helper's build
// (every package crew-desktop links, tests included) holds no package of
// ours outside desktop-helper, and its protocol package links only the
// standard library, since the server's tools import it.
func TestDesktopHelperImportsNothingOfTheServer(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	deps := func(args ...string) []string {
		cmd := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}"}, args...)...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	for _, line := range deps("-test", "./desktop-helper/...") {
		p, _, _ := strings.Cut(line, " ")
		if rel, ok := ours(p); ok && top(rel) != "desktop-helper" && !strings.HasSuffix(p, ".test") {
			t.Errorf("the desktop helper links %s, a package of the server", rel)
		}
	}
	for _, line := range deps("./desktop-helper/wire") {
		p, std, _ := strings.Cut(line, " ")
		if std != "true" && p != module+"/desktop-helper/wire" {
			t.Errorf("desktop-helper/wire links %s: the protocol links only the standard library", p)
		}
	}
}

// testCode returns the packages of deps (import paths of a program's
// build) that are test code: the standard library's testing packages and
// our own test helpers (a package whose name ends in "test", such as
// events/eventstest).
func testCode(deps []string) []string {
	var out []string
	for _, p := range deps {
		rel, mine := ours(p)
		if p == "testing" || strings.HasPrefix(p, "testing/") || mine && strings.HasSuffix(rel, "test") {
			out = append(out, p)
		}
	}
	return out
}

// TestBinariesLinkNoTestCode: crew links neither package testing nor a
// test helper of ours (go list -deps of its normal build, without the
// crewtest tag of the end-to-end tests); crew-desktop links no test
// helper of ours (its X library, jezek/xgb, imports testing itself).
func TestBinariesLinkNoTestCode(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, prog := range []string{"./cmd/crew", "./desktop-helper"} {
		cmd := exec.Command("go", "list", "-deps", prog)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", prog, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, module+"/events") && prog == "./cmd/crew" {
			t.Fatalf("go list -deps %s lists no events package: %v", prog, deps)
		}
		for _, p := range testCode(deps) {
			if prog == "./desktop-helper" && !strings.HasPrefix(p, module) {
				continue
			}
			t.Errorf("%s links %s: test code in the binary", prog, p)
		}
	}
}

// TestTestCodeCheckCatchesTestPackages: the check above fails on what it
// must refuse, so it can fail.
func TestTestCodeCheckCatchesTestPackages(t *testing.T) {
	got := testCode([]string{"fmt", "testing", "testing/fstest", "internal/synctest", "sync",
		module + "/events", module + "/events/eventstest", module + "/events/memlog",
		module + "/desktop-helper/desktoptest", "github.com/nats-io/nats.go", "golang.org/x/net/nettest"})
	want := []string{"testing", "testing/fstest", module + "/events/eventstest", module + "/desktop-helper/desktoptest"}
	if !slices.Equal(got, want) {
		t.Errorf("testCode found %v, want %v", got, want)
	}
}

// mayStartProcesses are the packages of ours that may start a process,
// each with the reason docs/security.md gives ("One way to start a
// process"). Test helpers (a package whose name ends in "test", such as
// desktop-helper/desktoptest, which starts Xvfb for the tests) may too:
// TestBinariesLinkNoTestCode keeps them out of every binary.
var mayStartProcesses = map[string]string{
	"tools/shell":   "the sandbox: every child process an agent's action causes starts here",
	"tools/browser": "the Chromium launcher: finds the browser (exec.LookPath); chromedp starts it, behind the wall's proxy, never with a command the agent names",
}

// startsProcess names what starts a process outside the sandbox: the
// package os/exec, and these functions of os, syscall and x/sys/unix.
var startsProcess = map[string][]string{
	"os":                    {"StartProcess"},
	"syscall":               {"ForkExec", "StartProcess", "Exec", "SYS_CLONE", "SYS_CLONE3", "SYS_FORK", "SYS_VFORK"},
	"golang.org/x/sys/unix": {"Exec", "SYS_CLONE", "SYS_CLONE3", "SYS_FORK", "SYS_VFORK"},
}

// source is what `go list -json` says of one package's files.
type source struct {
	ImportPath, Dir string
	Imports         []string
	GoFiles         []string
	CgoFiles        []string
}

// listSources is `go list -json ./...` of the module at root (with
// flags): every package's production files (no tests).
func listSources(t *testing.T, root string, flags ...string) []source {
	t.Helper()
	return goListJSON[source](t, root, append(flags, "-json=ImportPath,Dir,Imports,GoFiles,CgoFiles", "./...")...)
}

// processStarts returns, sorted, every package of module mod outside
// allowed (and the test helpers) that imports os/exec, and every place
// where one calls a function of startsProcess.
func processStarts(mod string, allowed map[string]string, pkgs []source) ([]string, error) {
	var out []string
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, mod+"/")
		if p.ImportPath == mod {
			rel, ok = "", true
		}
		if _, allow := allowed[rel]; !ok || allow || strings.HasSuffix(rel, "test") {
			continue
		}
		if slices.Contains(p.Imports, "os/exec") {
			out = append(out, fmt.Sprintf("%s imports os/exec", rel))
		}
		fset := token.NewFileSet()
		for _, name := range append(append([]string(nil), p.GoFiles...), p.CgoFiles...) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			local := map[string]string{} // the name a file uses → the import path
			for _, imp := range f.Imports {
				path := strings.Trim(imp.Path.Value, `"`)
				if _, watched := startsProcess[path]; !watched {
					continue
				}
				n := filepath.Base(path)
				if imp.Name != nil {
					n = imp.Name.Name
				}
				local[n] = path
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && slices.Contains(startsProcess[local[id.Name]], sel.Sel.Name) {
					pos := fset.Position(sel.Pos())
					out = append(out, fmt.Sprintf("%s/%s:%d: %s.%s", rel, name, pos.Line, local[id.Name], sel.Sel.Name))
				}
				return true
			})
		}
	}
	sort.Strings(out)
	return out, nil
}

// TestOnlyTheSandboxStartsProcesses: no package of ours but tools/shell
// (and the Chromium launcher) imports os/exec or calls a function that
// starts a process, so every child process an agent's action causes —
// shell commands, hooks, script jobs, git, the script and PDF children —
// starts with the shell's protections.
func TestOnlyTheSandboxStartsProcesses(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The normal build, and the end-to-end tests' (-tags crewtest).
	pkgs := listSources(t, root)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: is this the module root? %s", len(pkgs), root)
	}
	seen := map[string]bool{}
	for _, list := range [][]source{pkgs, listSources(t, root, "-tags=crewtest")} {
		found, err := processStarts(module, mayStartProcesses, list)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range found {
			if !seen[v] {
				seen[v] = true
				t.Errorf("%s: only tools/shell starts processes (docs/security.md, \"One way to start a process\")", v)
			}
		}
	}
	for rel := range mayStartProcesses {
		if !slices.ContainsFunc(pkgs, func(p source) bool { return p.ImportPath == module+"/"+rel }) {
			t.Errorf("%s may start processes but is no package here", rel)
		}
	}
}

// TestProcessCheckCatchesEveryWayToStartAProcess: over a module made for
// it, the check names an os/exec import, syscall.ForkExec, os.StartProcess
// and a renamed unix.Exec, and spares the allowed package and a test
// helper, so the test above can fail.
func TestProcessCheckCatchesEveryWayToStartAProcess(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":              "module example.com/m\n\ngo 1.24\n",
		"runs/runs.go":        "package runs\n\nimport \"os/exec\"\n\nfunc Run() error { return exec.Command(\"true\").Run() }\n",
		"fork/fork.go":        "package fork\n\nimport \"syscall\"\n\nfunc Fork() (int, error) { return syscall.ForkExec(\"/bin/true\", nil, nil) }\n",
		"start/start.go":      "package start\n\nimport \"os\"\n\nfunc Start() (*os.Process, error) { return os.StartProcess(\"/bin/true\", nil, &os.ProcAttr{}) }\n",
		"renamed/exec.go":     "package renamed\n\nimport sys \"syscall\"\n\nfunc Replace() error { return sys.Exec(\"/bin/true\", nil, nil) }\n",
		"sandbox/sb.go":       "package sandbox\n\nimport \"os/exec\"\n\nfunc Run() error { return exec.Command(\"true\").Run() }\n",
		"helpertest/h.go":     "package helpertest\n\nimport \"os/exec\"\n\nfunc Run() error { return exec.Command(\"true\").Run() }\n",
		"clean/clean.go":      "package clean\n\nimport \"os\"\n\nfunc Env() []string { return os.Environ() }\n",
		"clean/clean_test.go": "package clean\n\nimport (\n\t\"os/exec\"\n\t\"testing\"\n)\n\nfunc TestX(t *testing.T) { exec.Command(\"true\").Run() }\n",
	}
	for name, text := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := processStarts("example.com/m", map[string]string{"sandbox": "the sandbox"}, listSources(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fork/fork.go:5: syscall.ForkExec",
		"renamed/exec.go:5: syscall.Exec",
		"runs imports os/exec",
		"start/start.go:5: os.StartProcess",
	}
	if !slices.Equal(got, want) {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
