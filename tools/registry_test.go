package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

type fakeTool struct{ name string }

func (f fakeTool) Def() Def { return Def{Name: f.name, Params: json.RawMessage(`{"type":"object"}`)} }
func (f fakeTool) Run(context.Context, Env, json.RawMessage) (Result, error) {
	return Result{Output: f.name}, nil
}

var _ Tool = fakeTool{}

func TestNewRefusesDuplicatesAndBlanks(t *testing.T) {
	if _, err := New(fakeTool{"a"}, fakeTool{"b"}, fakeTool{"a"}); !errors.Is(err, ErrDuplicateTool) {
		t.Errorf("duplicate: got %v, want ErrDuplicateTool", err)
	}
	if _, err := New(fakeTool{""}); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := New(Builtins(Services{})...); err != nil {
		t.Errorf("builtins: %v", err)
	}
}

func TestRegistryDefsLookupRun(t *testing.T) {
	r, err := New(fakeTool{"zeta"}, fakeTool{"alpha"}, fakeTool{"mid"})
	if err != nil {
		t.Fatal(err)
	}
	names := func(defs []Def) []string {
		var out []string
		for _, d := range defs {
			out = append(out, d.Name)
		}
		return out
	}
	tests := []struct {
		ask  []string
		want []string
	}{
		{nil, []string{"alpha", "mid", "zeta"}},
		{[]string{"zeta", "alpha"}, []string{"alpha", "zeta"}},
		{[]string{"alpha", "unknown"}, []string{"alpha"}},
		{[]string{"zeta", "alpha", "zeta"}, []string{"alpha", "zeta"}}, // a name listed twice is declared once
		{[]string{}, nil},
	}
	for _, tt := range tests {
		if got := names(r.Defs(tt.ask)); !slices.Equal(got, tt.want) {
			t.Errorf("Defs(%v) = %v, want %v", tt.ask, got, tt.want)
		}
	}
	if _, ok := r.Lookup("mid"); !ok {
		t.Error("Lookup(mid) failed")
	}
	if _, ok := r.Lookup("nope"); ok {
		t.Error("Lookup(nope) succeeded")
	}
	res, err := r.Run(t.Context(), Env{}, Call{ID: "1", Name: "nope"})
	if err != nil || !res.IsError || !strings.Contains(res.Output, "unknown tool") {
		t.Errorf("unknown tool: %+v, %v", res, err)
	}
	res, err = r.Run(t.Context(), Env{}, Call{ID: "1", Name: "mid"})
	if err != nil || res.Output != "mid" {
		t.Errorf("run mid: %+v, %v", res, err)
	}
}

func TestBuiltinDefs(t *testing.T) {
	wantApproval := map[string]bool{
		"workspace_list": false, "workspace_read": false, "workspace_glob": false, "workspace_grep": false,
		"workspace_write": true, "workspace_edit": true, "shell_run": true, "tool_output_read": false, "todo_write": false,
		"task_stop": false,
	}
	r, err := New(Builtins(Services{})...)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); len(got) != len(wantApproval) {
		t.Errorf("builtins %v, want %d tools", got, len(wantApproval))
	}
	for _, d := range r.Defs(nil) {
		tool, _ := r.Lookup(d.Name)
		if want, ok := wantApproval[d.Name]; !ok || NeedsApproval(tool) != want {
			t.Errorf("%s: NeedsApproval %v, want %v (known %v)", d.Name, NeedsApproval(tool), want, ok)
		}
		if len(strings.TrimSpace(d.Description)) < 80 {
			t.Errorf("%s: description too short: %q", d.Name, d.Description)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(d.Params))
		if err != nil {
			t.Fatalf("%s: params: %v", d.Name, err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("mem:///"+d.Name, doc); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compile("mem:///" + d.Name); err != nil {
			t.Errorf("%s: params is not a valid JSON Schema: %v", d.Name, err)
		}
		if m, _ := doc.(map[string]any); m["type"] != "object" {
			t.Errorf("%s: params type %v, want object", d.Name, m["type"])
		}
	}
}

func TestArgumentsAreDecodedStrictly(t *testing.T) {
	env := newWorkspace(t, map[string]string{"a.txt": "x\n"})
	tests := []struct {
		tool Tool
		args string
	}{
		{NewFunc[workspaceReadArgs](WorkspaceRead{}), `{"path":"a.txt","lines":3}`},
		{NewFunc[workspaceReadArgs](WorkspaceRead{}), `{"path":3}`},
		{NewFunc[workspaceReadArgs](WorkspaceRead{}), `not json`},
		{NewFunc[workspaceReadArgs](WorkspaceRead{}), `{"path":"a.txt"} {}`},
		{NewFunc[writeArgs](WorkspaceWrite{}), `{"path":"b.txt"}`},
		{NewFunc[shellArgs](ShellRun{}), `{"cmd":"ls"}`},
	}
	for _, tt := range tests {
		res, err := tt.tool.Run(t.Context(), env, json.RawMessage(tt.args))
		if err != nil || !res.IsError {
			t.Errorf("%s %s: got %+v, %v; want an error result", tt.tool.Def().Name, tt.args, res, err)
		}
	}
}

type optInTool struct{ fakeTool }

func (o optInTool) Def() Def { d := o.fakeTool.Def(); d.Default = false; return d }

type defaultTool struct{ fakeTool }

func (d defaultTool) Def() Def { def := d.fakeTool.Def(); def.Default = true; return def }

// Which tools an agent with no tools list gets follows from each tool's own
// declaration, not from a list kept elsewhere.
func TestRegistryDefaultsFollowDeclarations(t *testing.T) {
	r, err := New(defaultTool{fakeTool{"zeta"}}, optInTool{fakeTool{"browser"}}, defaultTool{fakeTool{"alpha"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Defaults(), []string{"alpha", "zeta"}; !slices.Equal(got, want) {
		t.Errorf("Defaults() = %v, want %v", got, want)
	}
	for _, tl := range Builtins(Services{}) {
		if !tl.Def().Default {
			t.Errorf("built-in %s is not offered by default", tl.Def().Name)
		}
	}
}

// declaredTool returns the declaration it holds, as a Func does.
type declaredTool struct {
	fakeTool
	def Def
}

func (d declaredTool) Def() Def { return d.def }

// BenchmarkRegistryDefs is a step's declarations lookup: 47 tools of 60,
// listed in agent.yaml's order (not sorted).
func BenchmarkRegistryDefs(b *testing.B) {
	var all []Tool
	var names []string
	for i := range 60 {
		all = append(all, declaredTool{fakeTool{}, Def{Name: fmt.Sprintf("tool_%02d", (i*37)%60), Params: json.RawMessage(`{"type":"object"}`)}})
	}
	for i := range 47 {
		names = append(names, fmt.Sprintf("tool_%02d", (i*13)%60))
	}
	r, err := New(all...)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if len(r.Defs(names)) != 47 {
			b.Fatal("not 47 declarations")
		}
	}
}
