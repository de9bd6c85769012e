package loop_test

import (
	"slices"
	"testing"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
)

// An agent runs with the tools agent.yaml lists (the defaults when it
// lists none), less those a key alone gives, plus what its keys give, each
// once and in order; the override replaces its routes; a nameless agent
// shows its id. What agent.yaml wrote is left as it was.
func TestRunningAddsWhatTheKeysGive(t *testing.T) {
	browser := tools.Grant{Names: []string{"browser_navigate", "browser_text"}, Family: "browser_"}
	lead := tools.Grant{Names: []string{"spawn_teammate", "list_tasks"}}
	tests := []struct {
		name      string
		agent     loop.Agent
		override  []string
		grants    []tools.Grant
		wantTools []string
		wantRoute []string
	}{
		{"defaults when none listed", loop.Agent{ID: "a", Routes: []string{"fake:echo"}}, nil, nil,
			[]string{"workspace_read", "shell_run"}, []string{"fake:echo"}},
		{"listed, override", loop.Agent{ID: "a", Routes: []string{"fake:echo"}, Tools: []string{"workspace_list"}}, []string{"ollama:q"}, nil,
			[]string{"workspace_list"}, []string{"ollama:q"}},
		{"a family listed does not count, the key gives it", loop.Agent{ID: "a", Tools: []string{"browser_act", "workspace_list"}}, nil,
			[]tools.Grant{browser, lead}, []string{"workspace_list", "browser_navigate", "browser_text", "spawn_teammate", "list_tasks"}, nil},
		{"a family with no key is left out", loop.Agent{ID: "a", Tools: []string{"browser_act"}}, nil,
			[]tools.Grant{{Family: "browser_"}}, []string{}, nil},
		{"each once", loop.Agent{ID: "a", Tools: []string{"list_tasks"}}, nil,
			[]tools.Grant{lead, lead}, []string{"list_tasks", "spawn_teammate"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			written := slices.Clone(tt.agent.Tools)
			got := tt.agent.Running(tt.override, []string{"workspace_read", "shell_run"}, tt.grants...)
			if !slices.Equal(got.Tools, tt.wantTools) {
				t.Errorf("tools %q, want %q", got.Tools, tt.wantTools)
			}
			if !slices.Equal(got.Routes, tt.wantRoute) {
				t.Errorf("routes %q, want %q", got.Routes, tt.wantRoute)
			}
			if got.Name != "a" {
				t.Errorf("name %q, want the id", got.Name)
			}
			if !slices.Equal(tt.agent.Tools, written) {
				t.Errorf("agent.yaml's tools changed to %q", tt.agent.Tools)
			}
		})
	}
}
