package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
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
		{WorkspaceWrite{}, `{"path":"../x","content":"hi"}`, true},
		{WorkspaceWrite{}, `{"path":"out/secret","content":"hi"}`, true},
		{WorkspaceWrite{}, `{"path":"/etc/x","content":"hi"}`, true},
		{WorkspaceWrite{}, `{"path":".","content":"hi"}`, true},
		{WorkspaceWrite{}, `{"path":"b.txt","contents":"hi"}`, true},
		{WorkspaceWrite{}, `{"path":"b.txt"}`, true},
		{WorkspaceWrite{}, `"path=b.txt"`, true},
		{WorkspaceWrite{}, `{"path":"b.txt","content":"hi"} {}`, true},
		{WorkspaceWrite{}, `{"path":"new/b.txt","content":"hi"}`, false},
		{WorkspaceEdit{}, `{"path":"../a.txt","old":"a","new":"b"}`, true},
		{WorkspaceEdit{}, `{"path":"leak.txt","old":"a","new":"b"}`, true},
		{WorkspaceEdit{}, `{"path":"a.txt","old":"","new":"b"}`, true},
		{WorkspaceEdit{}, `{"path":"a.txt","old":"a","new":"a"}`, true},
		{WorkspaceEdit{}, `{"path":"a.txt","old":"hello","new":"bye","all":true}`, true},
		{WorkspaceEdit{}, `{"path":"a.txt","old":"hello","new":"bye"}`, false},
		{ShellRun{}, `{"cmd":"ls"}`, true},
		{ShellRun{}, `{"command":"  "}`, true},
		{ShellRun{}, `{"command":"sudo ls"}`, true},
		{ShellRun{}, `{"command":"ls","timeout_seconds":-1}`, true},
		{ShellRun{}, `{"command":"ls"}`, false},
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
