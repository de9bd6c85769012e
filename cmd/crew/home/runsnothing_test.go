package home

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// homeMayUse is everything the home package may use of our other
// packages (schemas aside): values and checks of what the home is — its
// config validated with the feature's own parser, its secrets taught to a
// redactor it is handed, its files written atomically. Nothing here
// opens, starts, dials or builds a part of the running crew: that is the
// App's (cmd/crew/app), which reads the home.
var homeMayUse = map[string]string{
	"events.Redactor":                 "the redactor the home is handed and teaches its secrets (LoadSecrets)",
	"events.MinEnvFileSecret":         "how long a value must be to count as a secret",
	"events.MinAuditKey":              "how long the audit key must be",
	"events.SecretName":               "which variable names are secrets",
	"events.ClientConfig":             "config.yaml's nats: as the client's settings (a value; the App connects)",
	"events.RedactURL":                "a nats.url without its credentials, in a config error",
	"events.HumanBytes":               "the store's size on disk, written as doctor writes sizes",
	"events.StoreConfig":              "config.yaml's nats: as where the home keeps its log (a value; the App opens it)",
	"events.ServerConfig":             "config.yaml's nats: sync and listen as the embedded server's settings (a value)",
	"loop.Agent":                      "agent.yaml's keys the loop reads, in the loop's own type, inlined in Agent (a value)",
	"loop/budget.Caps":                "config.yaml's budget: and the agents' daily caps, in the ledger's own type (a value)",
	"loop/llm.ParseRoute":             "config.yaml routes checked where they are written",
	"loop/llm.Catalog":                "config.yaml models: as the catalog's values",
	"loop/llm.NewCatalog":             "the catalog of config.yaml models: over the built-in defaults (values only)",
	"loop/llm.ModelOverride":          "one entry of config.yaml models:",
	"loop/llm.Price":                  "a price, read by doctor's route report",
	"loop/llm.CacheAutomatic":         "a catalog constant, read by doctor's route report",
	"loop/llm.CacheBreakpoints":       "a catalog constant, read by doctor's route report",
	"loop/llm.ProviderFake":           "a route's provider name",
	"loop/llm.ProviderOllama":         "a route's provider name",
	"loop/llm.ProviderOpenRouter":     "a route's provider name",
	"tools/web.SearchConfig":          "config.yaml's web_search:, in the web tools' own type (a value)",
	"tools/web/wall.CheckHostPattern": "web.hosts patterns checked where they are written",
	"tools.WriteAtomicExact":          "the home's files written through the one atomic writer",
	"gateways/scheduler.Schedule":     "agent.yaml's schedules: entries, in the scheduler's own config type (a value)",
	"tools/mcp.Config":                "config.yaml mcp_servers entries, in the MCP pool's own config type (a value)",
	"tools/shell.Network":             "config.yaml's shell_ports and shell_hosts as the shell's network policy (a value)",
	"gateways/web.CheckToken":         "an auth token checked as serve will check it",
	"gateways/web.GenerateToken":      "the auth token serve writes into the env file",
}

// TestHomeBuildsNothingThatRuns: cmd/crew/home is what the home is (its
// paths, files, config, env and secrets); every use it makes of another
// package of ours is one homeMayUse lists, so it opens no log, starts no
// process, builds no tool, model, ledger, pool or client.
func TestHomeBuildsNothingThatRuns(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var srcs []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, string(b))
	}
	if len(srcs) < 10 {
		t.Fatalf("found %d source files: run in cmd/crew/home", len(srcs))
	}
	used := map[string]bool{}
	for i, src := range srcs {
		uses, err := usesOfOurs(files[i], src)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range uses {
			used[u] = true
			if _, ok := homeMayUse[u]; !ok {
				t.Errorf("home uses %s: what runs is built by the App (cmd/crew/app), not the home", u)
			}
		}
	}
	for u := range homeMayUse {
		if !used[u] {
			t.Errorf("homeMayUse lists %s, which the home no longer uses: take it off", u)
		}
	}
}

// TestHomeCheckCatchesABuiltPart: the check of TestHomeBuildsNothingThatRuns
// sees a ledger opened, a client built and a process started, however the
// import is named.
func TestHomeCheckCatchesABuiltPart(t *testing.T) {
	src := `package home
import (
	"github.com/my-agent-crew/crew/loop/budget"
	w "github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/tools/shell"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/schemas"
)
func f(r *events.Redactor) {
	budget.Open(nil, budget.Config{})
	_ = w.Client{URL: "x"}
	shell.Run(nil, shell.Command{})
	schemas.Validate()
}`
	uses, err := usesOfOurs("planted.go", src)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, u := range uses {
		if _, ok := homeMayUse[u]; !ok {
			bad = append(bad, u)
		}
	}
	slices.Sort(bad)
	want := []string{"gateways/web.Client", "loop/budget.Config", "loop/budget.Open", "tools/shell.Command", "tools/shell.Run"}
	if !slices.Equal(slices.Compact(bad), want) {
		t.Errorf("caught %v, want %v", bad, want)
	}
}

// usesOfOurs lists every pkg.Name src uses of our module's packages but
// schemas, as "rel/path.Name".
func usesOfOurs(name, src string) ([]string, error) {
	const module = "github.com/my-agent-crew/crew/"
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	local := map[string]string{} // local name → rel path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		rel, ok := strings.CutPrefix(p, module)
		if !ok || rel == "schemas" {
			continue
		}
		n := filepath.Base(rel)
		if imp.Name != nil {
			n = imp.Name.Name
		}
		local[n] = rel
	}
	var uses []string
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok {
				if rel, ok := local[id.Name]; ok {
					uses = append(uses, rel+"."+s.Sel.Name)
				}
			}
		}
		return true
	})
	return uses, nil
}
