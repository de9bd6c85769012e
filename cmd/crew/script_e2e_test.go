package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// R-SCR through a real crew serve: tool_script runs in a child of the crew
// binary itself (crew __script), its nested calls reach the chat card and
// the runs API, and the card still lists them after a reload (the
// message's context).
func TestServeToolScriptRunsInTheCrewChild(t *testing.T) {
	home := initHome(t)
	must(t, os.WriteFile(filepath.Join(home, "workspace", "a.txt"), []byte("alpha beta\n"), 0o644))
	script := writeScript(t, `
- tool_calls:
    - name: tool_script
      arguments: {script: "r = tools.call(\"workspace_read\", {\"path\": \"a.txt\"})\nw = tools.call(\"workspace_write\", {\"path\": \"b.txt\", \"content\": \"x\"})\nprint(r[\"output\"])\nprint(w[\"error\"])"}
- text: "done"
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "read it by script"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "settled", settled)
	var result string
	for _, m := range c.History {
		if m.Role == "tool" {
			result = m.Text
		}
	}
	if !strings.Contains(result, "alpha beta") || !strings.Contains(result, "workspace_write cannot be called from a script") {
		t.Errorf("script result %q", result)
	}
	if _, err := os.Stat(filepath.Join(home, "workspace", "b.txt")); err == nil {
		t.Error("a script wrote a file in read-only mode")
	}
	page := getText(t, s.url+"/c/"+id)
	if !strings.Contains(page, "1. workspace_read — ") || !strings.Contains(page, "received_chars") {
		t.Errorf("the chat card does not list the script's calls")
	}
	var list []struct {
		RunID string `json:"run_id"`
	}
	getJSON(t, s.url+"/api/conversations/"+id+"/runs", &list)
	if len(list) != 1 {
		t.Fatalf("runs %+v", list)
	}
	var run struct {
		Steps []struct {
			ToolCalls []struct {
				Tool   string `json:"tool"`
				Nested []struct {
					Tool string `json:"tool"`
				} `json:"nested"`
			} `json:"tool_calls"`
		} `json:"steps"`
	}
	getJSON(t, s.url+"/api/runs/"+list[0].RunID, &run)
	found := false
	for _, st := range run.Steps {
		for _, tc := range st.ToolCalls {
			found = found || (tc.Tool == "tool_script" && len(tc.Nested) == 1 && tc.Nested[0].Tool == "workspace_read")
		}
	}
	if !found {
		t.Errorf("the run does not list the nested calls: %+v", run)
	}
	s.stop(t)
}
