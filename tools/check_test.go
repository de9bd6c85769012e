package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A call Check refuses is one Run refuses with the same words, and Check
// changes nothing; a call Check lets through is left to Run.
func TestCheckRefusesWhatRunWouldRefuse(t *testing.T) {
	env := newWorkspace(t, map[string]string{"a.txt": "hello"})
	escapeWorkspace(t, env)
	env.Agent = AgentPolicy{ShellDenyPatterns: []string{`\bsudo\b`}}
	cases := []struct {
		tool    Tool
		args    string
		refused bool
	}{
		{NewFunc[writeArgs](WorkspaceWrite{}), `{"path":"../x","content":"hi"}`, true},
		{NewFunc[writeArgs](WorkspaceWrite{}), `{"path":"out/secret","content":"hi"}`, true},
		{NewFunc[writeArgs](WorkspaceWrite{}), `{"path":"/etc/x","content":"hi"}`, true},
		{NewFunc[writeArgs](WorkspaceWrite{}), `{"path":".","content":"hi"}`, true},
		{NewFunc[writeArgs](WorkspaceWrite{}), `{"path":"b.txt","contents":"hi"}`, true},
		{NewFunc[writeArgs](WorkspaceWrite{}), `{"path":"b.txt"}`, true},
		{NewFunc[writeArgs](WorkspaceWrite{}), `"path=b.txt"`, true},
		{NewFunc[writeArgs](WorkspaceWrite{}), `{"path":"b.txt","content":"hi"} {}`, true},
		{NewFunc[writeArgs](WorkspaceWrite{}), `{"path":"new/b.txt","content":"hi"}`, false},
		{NewFunc[editArgs](WorkspaceEdit{}), `{"path":"../a.txt","old":"a","new":"b"}`, true},
		{NewFunc[editArgs](WorkspaceEdit{}), `{"path":"leak.txt","old":"a","new":"b"}`, true},
		{NewFunc[editArgs](WorkspaceEdit{}), `{"path":"a.txt","old":"","new":"b"}`, true},
		{NewFunc[editArgs](WorkspaceEdit{}), `{"path":"a.txt","old":"a","new":"a"}`, true},
		{NewFunc[editArgs](WorkspaceEdit{}), `{"path":"a.txt","old":"hello","new":"bye","all":true}`, true},
		{NewFunc[editArgs](WorkspaceEdit{}), `{"path":"a.txt","old":"hello","new":"bye"}`, false},
		{NewFunc[shellArgs](ShellRun{}), `{"cmd":"ls"}`, true},
		{NewFunc[shellArgs](ShellRun{}), `{"command":"  "}`, true},
		{NewFunc[shellArgs](ShellRun{}), `{"command":"sudo ls"}`, true},
		{NewFunc[shellArgs](ShellRun{}), `{"command":"ls","timeout_seconds":-1}`, true},
		{NewFunc[shellArgs](ShellRun{}), `{"command":"ls"}`, false},
	}
	for _, tc := range cases {
		name := tc.tool.Def().Name + " " + tc.args
		err := Check(tc.tool, env, json.RawMessage(tc.args))
		if (err != nil) != tc.refused {
			t.Errorf("%s: Check = %v, want refused %v", name, err, tc.refused)
			continue
		}
		if err == nil {
			continue
		}
		if _, statErr := os.Stat(filepath.Join(filepath.Dir(env.Workspace), "x")); statErr == nil {
			t.Fatalf("%s: Check wrote outside the workspace", name)
		}
		if res := call(t, tc.tool, env, tc.args); !res.IsError || res.Output != err.Error() {
			t.Errorf("%s: Check says %q, Run says %q (error %v)", name, err.Error(), res.Output, res.IsError)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(env.Workspace, "a.txt")); string(got) != "hello" {
		t.Errorf("a.txt = %q after refused calls", got)
	}
}

// Issue 26: a call whose arguments break its tool's declared schema — a
// required property missing or null, a property of the wrong JSON type,
// one the schema does not allow — is refused by Check, before anyone is
// asked, naming the property; a call that fits passes.
func TestCheckRefusesArgumentsOutsideTheSchema(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"},"x":{"type":["number","null"]},"tags":{"type":"array"}},"required":["name"],"additionalProperties":false}`)
	cases := []struct{ args, want string }{
		{`{"name":"a","n":3,"x":1.5,"tags":[]}`, ""},
		{`{"name":"a","n":3.0}`, ""},
		{`{"name":"a","x":null}`, ""},
		{``, `"name" is required`},
		{`{"name":null}`, `"name" is required`},
		{`{"name":1}`, `"name" must be string, not integer`},
		{`{"name":"a","n":1.5}`, `"n" must be integer, not number`},
		{`{"name":"a","tags":"x"}`, `"tags" must be array, not string`},
		{`{"name":"a","other":1}`, `unknown argument "other"`},
		{`[1]`, `want a JSON object`},
	}
	for _, c := range cases {
		err := CheckArgs("t", schema, json.RawMessage(c.args))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want it to say %s", c.args, err, c.want)
		}
	}
	// Without additionalProperties: false, other arguments pass.
	if err := CheckArgs("t", json.RawMessage(`{"type":"object","required":["a"]}`), json.RawMessage(`{"a":1,"b":2}`)); err != nil {
		t.Errorf("open schema: %v", err)
	}
	// Through Check, for a tool without a Checker of its own.
	if err := Check(NewFunc[workspaceGlobArgs](WorkspaceGlob{}), Env{}, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), `"pattern" is required`) {
		t.Errorf("workspace_glob {} = %v", err)
	}
}
