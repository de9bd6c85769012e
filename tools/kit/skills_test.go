package kit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/tools"
)

func TestSkillsPrecedence(t *testing.T) {
	home, agent := homeAndAgent(t)
	write(t, home, "skills/git.md", "---\ndescription: Home git habits\n---\nHome git.")
	write(t, home, "skills/debug.md", "---\ndescription: How to debug\n---\nBisect.")
	write(t, home, "skills/notes.txt", "not a skill")
	write(t, home, "skills/.#git.md", "editor lock file")
	write(t, home, "skills/sub/inner.md", "in a sub-folder: skipped")
	write(t, agent, "skills/git.md", "---\ndescription: Agent git habits\n---\nAgent git.")
	write(t, agent, "skills/style.md", "---\nname: house-style\ndescription: ignored when always\nalways: true\n---\nTabs.")

	got, err := Skills(home, agent)
	if err != nil {
		t.Fatal(err)
	}
	want := []Skill{
		{Name: "debug", Description: "How to debug", Path: filepath.Join(home, "skills/debug.md"), Body: "Bisect."},
		{Name: "git", Description: "Agent git habits", Path: filepath.Join(agent, "skills/git.md"), Body: "Agent git."},
		{Name: "house-style", Description: "ignored when always", Path: filepath.Join(agent, "skills/style.md"), Body: "Tabs.", Always: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d skills %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("skill %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestSkillsMasterReadsHomeOnce(t *testing.T) {
	home := t.TempDir()
	write(t, home, "skills/git.md", "Git.")
	for _, agentDir := range []string{home, home + "/", ""} {
		got, err := Skills(home, agentDir)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Name != "git" {
			t.Errorf("agentDir %q: got %+v, want the one skill git", agentDir, got)
		}
	}
	// Through a symlink too.
	link := filepath.Join(t.TempDir(), "home")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	if got, err := Skills(home, link); err != nil || len(got) != 1 {
		t.Errorf("symlinked agent folder: got %+v, %v; want one skill", got, err)
	}
}

func TestSkillsNone(t *testing.T) {
	home, agent := homeAndAgent(t)
	got, err := Skills(home, agent)
	if err != nil || len(got) != 0 {
		t.Errorf("got %+v, %v; want none", got, err)
	}
	if s := SkillsSection(got); s != "" {
		t.Errorf("section %q, want empty", s)
	}
}

func TestSkillsBrokenFileKeepsTheOthers(t *testing.T) {
	home, agent := homeAndAgent(t)
	write(t, home, "skills/good.md", "---\ndescription: Fine\n---\nOK.")
	bad := write(t, agent, "skills/bad.md", "---\nalways: maybe\n---\nX.")
	write(t, agent, "skills/one.md", "---\nname: same\n---\n1")
	dup := write(t, agent, "skills/two.md", "---\nname: same\n---\n2")
	write(t, agent, "skills/spaced.md", "---\nname: two words\n---\n2")

	got, err := Skills(home, agent)
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{bad + ":2:9: ", dup + `: the name "same" is already used by`, `"two words"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "good,same" {
		t.Errorf("loaded %v, want good,same", names)
	}
	if got[1].Body != "1" {
		t.Errorf("duplicate kept %q, want the first file's", got[1].Body)
	}
}

func TestSkillsSection(t *testing.T) {
	skills := []Skill{
		{Name: "tone", Body: "Be brief.\n\nNo emoji.", Always: true},
		{Name: "git", Description: "Git habits:\n  small commits"},
		{Name: "debug", Description: "How to debug"},
		{Name: "bare"},
		{Name: "empty-always", Always: true},
		{Name: "alpha", Body: "First.", Always: true},
	}
	want := `# Skills

Skills are instructions for particular kinds of work. Before doing work that one of these covers, call skill_read with its name to load its full text, and follow it.

- bare
- debug: How to debug
- git: Git habits: small commits

## alpha

First.

## tone

Be brief.

No emoji.`
	got := SkillsSection(skills)
	if got != want {
		t.Errorf("section:\n%s\nwant:\n%s", got, want)
	}
	if again := SkillsSection(skills); again != got {
		t.Error("the same skills gave different bytes")
	}

	onlyAlways := SkillsSection([]Skill{{Name: "tone", Body: "Be brief.", Always: true}})
	if onlyAlways != "# Skills\n\n## tone\n\nBe brief." {
		t.Errorf("only always: %q", onlyAlways)
	}
}

func TestSkillsSectionSameFilesSameBytes(t *testing.T) {
	home, agent := homeAndAgent(t)
	for _, n := range []string{"zeta", "alpha", "mid", "beta"} {
		write(t, home, "skills/"+n+".md", "---\ndescription: about "+n+"\n---\n"+n)
	}
	write(t, agent, "skills/always.md", "---\nalways: true\n---\nAlways on.")
	var first string
	for i := range 5 {
		skills, err := Skills(home, agent)
		if err != nil {
			t.Fatal(err)
		}
		s := SkillsSection(skills)
		if i == 0 {
			first = s
		} else if s != first {
			t.Fatalf("run %d differs:\n%s\nvs\n%s", i, s, first)
		}
	}
}

func callSkillRead(t *testing.T, env tools.Env, args string) tools.Result {
	t.Helper()
	res, err := SkillRead().Run(t.Context(), env, json.RawMessage(args))
	if err != nil {
		t.Fatalf("skill_read %s: %v", args, err)
	}
	return res
}

func TestSkillRead(t *testing.T) {
	home, agent := homeAndAgent(t)
	write(t, home, "skills/git.md", "---\ndescription: Git\n---\nHome git.")
	write(t, home, "skills/debug.md", "---\ndescription: Debug\n---\nBisect first.\n")
	write(t, agent, "skills/git.md", "---\ndescription: Git\n---\nAgent git.")
	write(t, agent, "skills/empty.md", "---\ndescription: Nothing\n---\n")
	env := tools.Env{HomeDir: home, AgentDir: agent}

	tool := SkillRead()
	if def := tool.Def(); def.Name != "skill_read" || !json.Valid(def.Params) || !strings.Contains(def.Description, "skill") {
		t.Errorf("def %+v", def)
	}
	if tools.NeedsApproval(tool) {
		t.Error("skill_read is gated")
	}

	tests := []struct {
		args    string
		isError bool
		want    string
	}{
		{`{"name":"debug"}`, false, "Bisect first."},
		{`{"name":"git"}`, false, "Agent git."},
		{`{"name":"empty"}`, false, "The skill empty has no text."},
		{`{"name":"nope"}`, true, `there is no skill "nope"; the skills are: debug, empty, git`},
		{`{"name":""}`, true, "name is required"},
		{`{}`, true, "name is required"},
		{`{"skill":"git"}`, true, `unknown field "skill"`},
	}
	for _, tc := range tests {
		res := callSkillRead(t, env, tc.args)
		if res.IsError != tc.isError || !strings.Contains(res.Output, tc.want) {
			t.Errorf("%s: got %+v, want IsError %v and %q", tc.args, res, tc.isError, tc.want)
		}
	}
	if res := callSkillRead(t, env, `{"name":"git"}`); res.Output != "Agent git." {
		t.Errorf("output %q, want the body only", res.Output)
	}

	res := callSkillRead(t, tools.Env{HomeDir: t.TempDir()}, `{"name":"git"}`)
	if !res.IsError || !strings.Contains(res.Output, "no skills are installed") {
		t.Errorf("no skills: %+v", res)
	}

	bad := write(t, agent, "skills/bad.md", "---\nalways: [\n---\n")
	res = callSkillRead(t, env, `{"name":"bad"}`)
	if !res.IsError || !strings.Contains(res.Output, bad) {
		t.Errorf("broken file: %+v, want an error naming %s", res, bad)
	}
	if res := callSkillRead(t, env, `{"name":"debug"}`); res.IsError {
		t.Errorf("a broken file hid another skill: %+v", res)
	}
}
