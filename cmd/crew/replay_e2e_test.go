package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-OBS-3 across features: a run of each feature recorded through a real
// crew serve replays identical with crew replay on the stopped home, the
// same crew serve builds (cmd/crew/app); a changed setting the loop
// decides on (the agent's max_steps) names the first divergent step.
func TestReplayReproducesEveryFeature(t *testing.T) {
	cases := []struct {
		name, script string
		// config is appended to config.yaml before serve starts; %ROUTE%
		// is the script's route.
		config string
		// changed, when set, replaces the master's max_steps line in
		// agent.yaml before the replay: the replay must then diverge at
		// step diverge.
		changed string
		diverge string
	}{
		{name: "tool call", script: `
- tool_calls:
    - name: workspace_list
      arguments: {path: "."}
- text: "Listed."
`},
		{name: "canvas create", script: `
- tool_calls:
    - name: artifact_create
      arguments: {title: "Plan", kind: markdown, content: "one\ntwo\n"}
- text: "Wrote the plan."
`},
		{name: "loop guard reminder", script: `
- tool_calls:
    - name: workspace_list
      arguments: {path: "."}
- tool_calls:
    - name: workspace_list
      arguments: {path: "."}
- tool_calls:
    - name: workspace_list
      arguments: {path: "."}
- text: "Stopped repeating."
`},
		{name: "refused before the gate", script: `
- tool_calls:
    - name: no_such_tool
      arguments: {}
- text: "That tool does not exist."
`},
		{name: "changed step limit", script: `
- tool_calls:
    - name: workspace_list
      arguments: {path: "."}
- tool_calls:
    - name: workspace_glob
      arguments: {pattern: "*.md"}
- tool_calls:
    - name: workspace_grep
      arguments: {pattern: "x"}
- text: "Looked around."
`, changed: "max_steps: 2", diverge: "(step 2)"},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			home := initHome(t)
			script := writeScript(t, tc.script)
			route := "fake:script:" + script
			appendTo := func(file, text string) {
				t.Helper()
				f, err := os.OpenFile(filepath.Join(home, file), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.WriteString("\n" + strings.ReplaceAll(text, "%ROUTE%", route)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.config != "" {
				appendTo("config.yaml", tc.config)
			}
			s := startServe(t, home, "MY_AGENT_ROUTES="+route)
			_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "go"})
			id := acc["conversation_id"].(string)
			eventstest.Eventually(t, "the run to settle (approving what it asks)", func() bool {
				var c convView
				getJSON(t, s.url+"/api/conversations/"+id, &c)
				for _, p := range c.PendingApprovals {
					postJSON(t, s.url+"/api/approvals/"+p.ID, map[string]any{"decision": "approve"})
				}
				return settled(c)
			})
			runs := finishedRuns(t, s.url, id, 1)
			s.stop(t)
			if tc.changed != "" {
				p := filepath.Join(home, "agent.yaml")
				b, err := os.ReadFile(p)
				if err != nil || !strings.Contains(string(b), "max_steps: 12") {
					t.Fatalf("the master's agent.yaml has no max_steps: 12 to change (%v)", err)
				}
				if err := os.WriteFile(p, []byte(strings.Replace(string(b), "max_steps: 12", tc.changed, 1)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// The replay runs with the home's settings of the recording
			// (MY_AGENT_ROUTES, which the roster in each prompt names).
			out, errOut, code := crewEnv(t, home, []string{"MY_AGENT_ROUTES=" + route}, "replay", runs[0].RunID)
			if tc.changed == "" {
				if code != 0 || !strings.Contains(out, "events identical") {
					t.Fatalf("replay of %s: code %d\n%s%s", tc.name, code, out, errOut)
				}
				return
			}
			if code != 1 || !strings.Contains(out, "DIVERGED") || !strings.Contains(errOut, tc.diverge) {
				t.Fatalf("replay after %s: want a divergence at %s, got code %d\n%s%s", tc.name, tc.diverge, code, out, errOut)
			}
		})
	}
}
