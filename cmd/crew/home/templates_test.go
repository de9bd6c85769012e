package home

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// templateTools are the built-in tools a template may list.
var templateTools = []string{
	"workspace_list", "workspace_read", "workspace_glob", "workspace_grep", "workspace_write", "workspace_edit",
	"shell_run", "tool_output_read", "ask_user", "progress_note",
	"memory_save", "memory_search", "user_memory_save", "user_memory_forget",
	"wiki_get", "wiki_search", "wiki_apply", "skill_read", "delegate",
	"fetch_url", "web_search",
}

func TestTemplatesList(t *testing.T) {
	want := []string{"fullstack-developer", "health-coach", "kongming", "ledger", "pong", "researcher"}
	if got := Templates(); !slices.Equal(got, want) {
		t.Fatalf("Templates() = %v, want %v", got, want)
	}
}

func TestAddAgentInstallsAndLoads(t *testing.T) {
	for _, tmpl := range Templates() {
		t.Run(tmpl, func(t *testing.T) {
			h := newHome(t)
			dir, err := AddAgent(h, tmpl)
			if err != nil {
				t.Fatalf("AddAgent: %v", err)
			}
			if want := filepath.Join(h, "agents", tmpl); dir != want {
				t.Errorf("dir = %s, want %s", dir, want)
			}
			for _, f := range []string{"agent.yaml", "AGENTS.md", "SOUL.md", "MEMORY.md"} {
				if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("%s: %v", f, err)
				}
			}
			for _, d := range []string{"memory", "workspace"} {
				if !isDir(filepath.Join(dir, d)) {
					t.Errorf("%s/ missing", d)
				}
			}
			for _, f := range []string{"AGENTS.md", "SOUL.md"} {
				b, _ := os.ReadFile(filepath.Join(dir, f))
				if n := strings.Count(string(b), "\n"); n < 10 || n > 30 {
					t.Errorf("%s has %d lines, want 10–30", f, n)
				}
			}
			assertNoTemp(t, h)

			home := mustLoad(t, h)
			if len(home.Problems) != 0 {
				t.Fatalf("Problems: %v", home.Problems)
			}
			a := home.Agents[tmpl]
			if a == nil {
				t.Fatalf("agent %s not loaded; agents: %v", tmpl, home.Agents)
			}
			if a.Name == "" || a.Description == "" || len(a.Routes) == 0 || len(a.Tools) == 0 {
				t.Errorf("incomplete agent: %+v", a)
			}
			for _, tool := range a.Tools {
				if !slices.Contains(templateTools, tool) {
					t.Errorf("unknown tool %q", tool)
				}
			}
			switch tmpl {
			case "kongming":
				for _, tool := range a.Tools {
					if tool == "workspace_write" || tool == "workspace_edit" || tool == "shell_run" || tool == "ask_user" {
						t.Errorf("read-only advisor has %s", tool)
					}
				}
			case "fullstack-developer":
				if a.MaxSteps <= DefaultMaxSteps {
					t.Errorf("max_steps = %d, want more than the default %d", a.MaxSteps, DefaultMaxSteps)
				}
			}
		})
	}
}

func TestAddAgentAllTemplatesTogether(t *testing.T) {
	h := newHome(t)
	for _, tmpl := range Templates() {
		if _, err := AddAgent(h, tmpl); err != nil {
			t.Fatalf("AddAgent %s: %v", tmpl, err)
		}
	}
	home := mustLoad(t, h)
	if len(home.Problems) != 0 {
		t.Fatalf("Problems: %v", home.Problems)
	}
	if len(home.Agents) != 1+len(Templates()) {
		t.Fatalf("agents = %d, want master + %d", len(home.Agents), len(Templates()))
	}
}

func TestAddAgentRefusesExisting(t *testing.T) {
	h := newHome(t)
	dir, err := AddAgent(h, "researcher")
	if err != nil {
		t.Fatal(err)
	}
	custom := "name: Mine\n"
	writeFile(t, filepath.Join(dir, "agent.yaml"), custom)
	before := snapshot(t, h)
	if _, err := AddAgent(h, "researcher"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second AddAgent: err = %v, want already exists", err)
	}
	if after := snapshot(t, h); !maps.Equal(before, after) {
		t.Fatalf("home changed:\nbefore %v\nafter  %v", before, after)
	}

	// An empty folder the owner made counts as existing too.
	if err := os.Mkdir(filepath.Join(h, "agents", "kongming"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := AddAgent(h, "kongming"); err == nil {
		t.Fatal("AddAgent over an empty folder succeeded")
	}
	if entries, _ := os.ReadDir(filepath.Join(h, "agents", "kongming")); len(entries) != 0 {
		t.Fatalf("empty folder was filled: %v", entries)
	}
}

func TestAddAgentUnknownTemplate(t *testing.T) {
	h := newHome(t)
	_, err := AddAgent(h, "nope")
	if err == nil {
		t.Fatal("AddAgent(nope) succeeded")
	}
	for _, want := range append([]string{`"nope"`}, Templates()...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(h, "agents")); len(entries) != 0 {
		t.Fatalf("agents/ not empty: %v", entries)
	}
	for _, bad := range []string{"", "../kongming", "kongming/..", "."} {
		if _, err := AddAgent(h, bad); err == nil {
			t.Errorf("AddAgent(%q) succeeded", bad)
		}
	}
}

func TestAddAgentNeedsHome(t *testing.T) {
	dir := t.TempDir()
	if _, err := AddAgent(dir, "kongming"); err == nil || !strings.Contains(err.Error(), "crew init") {
		t.Fatalf("err = %v, want a hint to run crew init", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("created %v in a non-home", entries)
	}
}

func assertNoTemp(t *testing.T, home string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(home, "agents"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("leftover %s in agents/", e.Name())
		}
	}
}
