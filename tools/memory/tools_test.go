package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/memory"
)

// testEnv is an agent folder and a home in temp dirs, at 2026-11-30 00:15
// in the owner's zone (23:15 UTC the day before).
func testEnv(t *testing.T) tools.Env {
	t.Helper()
	home := t.TempDir()
	agent := filepath.Join(home, "agents", "cook")
	if err := os.MkdirAll(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	return tools.Env{
		AgentID: "cook", Conversation: "c1", AgentDir: agent, HomeDir: home,
	}
}

// clock is the tests' time (testEnv) for memory.Tools.
var clock = tools.Services{Clock: func() time.Time { return time.Date(2026, 11, 29, 23, 15, 0, 0, time.UTC) }, Location: time.FixedZone("CET", 3600)}

func tool(t *testing.T, name string) tools.Tool {
	t.Helper()
	reg, err := tools.New(memory.Tools(clock, memory.WithRanker(wordRank))...)
	if err != nil {
		t.Fatal(err)
	}
	tl, ok := reg.Lookup(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tl
}

func call(t *testing.T, env tools.Env, name, args string) tools.Result {
	t.Helper()
	res, err := tool(t, name).Run(t.Context(), env, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return res
}

type toolCase struct {
	name    string
	args    string
	isError bool
	want    []string // substrings of Output
}

func runCases(t *testing.T, env tools.Env, tool string, cases []toolCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, env, tool, tc.args)
			if res.IsError != tc.isError {
				t.Errorf("IsError %v, want %v: %s", res.IsError, tc.isError, res.Output)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output lacks %q:\n%s", w, res.Output)
				}
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestToolsDefs(t *testing.T) {
	var names []string
	for _, tl := range memory.Tools(clock) {
		d := tl.Def()
		names = append(names, d.Name)
		if strings.TrimSpace(d.Description) == "" {
			t.Errorf("%s: no description", d.Name)
		}
		if tools.NeedsApproval(tl) {
			t.Errorf("%s needs approval; memory tools are not gated", d.Name)
		}
		var s struct {
			Type                 string         `json:"type"`
			Required             []string       `json:"required"`
			Properties           map[string]any `json:"properties"`
			AdditionalProperties *bool          `json:"additionalProperties"`
		}
		if err := json.Unmarshal(d.Params, &s); err != nil {
			t.Fatalf("%s: params: %v", d.Name, err)
		}
		if s.Type != "object" || len(s.Required) == 0 || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: params want an object with required fields and additionalProperties false: %s", d.Name, d.Params)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", d.Name, r)
			}
		}
	}
	want := []string{"memory_save", "memory_search", "user_memory_save", "user_memory_forget", "wiki_get", "wiki_search", "wiki_apply"}
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}

func TestToolsWithoutFolderAreHarnessErrors(t *testing.T) {
	args := map[string]string{
		"memory_save":        `{"text":"x"}`,
		"memory_search":      `{"query":"x"}`,
		"user_memory_save":   `{"name":"diet","text":"x"}`,
		"user_memory_forget": `{"name":"diet"}`,
		"wiki_get":           `{"page":"p"}`,
		"wiki_search":        `{"query":"x"}`,
		"wiki_apply":         `{"page":"p","content":"x"}`,
	}
	for _, dir := range []string{"", "relative/dir", filepath.Join(t.TempDir(), "missing")} {
		for name, a := range args {
			_, err := tool(t, name).Run(t.Context(), tools.Env{AgentDir: dir, HomeDir: dir}, json.RawMessage(a))
			if !errors.Is(err, memory.ErrNoDir) {
				t.Errorf("%s with folder %q: err %v, want ErrNoDir", name, dir, err)
			}
		}
	}
	if _, err := os.Stat("relative"); err == nil {
		t.Error("a tool wrote beside the working directory")
	}
}

func TestMemorySave(t *testing.T) {
	env := testEnv(t)
	note := filepath.Join(env.AgentDir, "memory", "2026-11-30.md")
	runCases(t, env, "memory_save", []toolCase{
		{"first", `{"text":"owner wants pasta on Friday"}`, false, []string{"memory/2026-11-30.md", "next message"}},
		{"second, multi-line", `{"text":"  shopping:\nflour  \neggs\n"}`, false, nil},
		{"empty", `{"text":"  "}`, true, []string{"text is required"}},
		{"unknown field", `{"text":"x","path":"/etc/passwd"}`, true, []string{"unknown field"}},
	})
	want := "- 00:15 owner wants pasta on Friday\n- 00:15 shopping:\n  flour\n  eggs\n"
	if got := readFile(t, note); got != want {
		t.Errorf("note:\n%q\nwant:\n%q", got, want)
	}
	assertNoTemp(t, filepath.Dir(note))
}

func TestMemorySearch(t *testing.T) {
	env := testEnv(t)
	writeFile(t, filepath.Join(env.AgentDir, "MEMORY.md"), "# Memory\nOwner is vegetarian.\n")
	writeFile(t, filepath.Join(env.AgentDir, "memory", "2026-11-28.md"), "- 10:00 bought VEGETABLES\n")
	writeFile(t, filepath.Join(env.AgentDir, "memory", "2026-11-30.md"), "- 09:00 nothing\n- 10:00 vegetable soup\n")
	writeFile(t, filepath.Join(env.HomeDir, "wiki", "veg.md"), "vegetable wiki is not memory\n")
	runCases(t, env, "memory_search", []toolCase{
		{"passages ranked, newest first on a tie", `{"query":"VEGET"}`, false, []string{
			"1. MEMORY.md:1 (memory)\n   # Memory\n   Owner is vegetarian.\n2.",
			"\n2. memory/2026-11-30.md:2 (note)\n", "- 10:00 vegetable soup", "\n3. memory/2026-11-28.md:1 (note)\n"}},
		{"days limits daily notes", `{"query":"veget","days":2}`, false, []string{"1. MEMORY.md:1 (memory)", "2. memory/2026-11-30.md:2 (note)"}},
		{"no match", `{"query":"sushi"}`, false, []string{`no matches for "sushi"`}},
		{"empty query", `{"query":""}`, true, []string{"query is required"}},
		{"bad days", `{"query":"x","days":-1}`, true, []string{"days"}},
	})
	if res := call(t, env, "memory_search", `{"query":"veget","days":2}`); strings.Contains(res.Output, "2026-11-28") || strings.Contains(res.Output, "wiki") {
		t.Errorf("days 2 or the wiki leaked in:\n%s", res.Output)
	}

	var many strings.Builder
	for i := range 60 {
		fmt.Fprintf(&many, "- match %d\n", i)
	}
	writeFile(t, filepath.Join(env.AgentDir, "memory", "2026-11-29.md"), many.String())
	res := call(t, env, "memory_search", `{"query":"match"}`)
	if n := strings.Count(res.Output, "(note)\n"); n != 10 || !strings.Contains(res.Output, "1. memory/2026-11-29.md:1 (note)") {
		t.Errorf("got %d passages, want the best 10:\n%s", n, res.Output)
	}
	// Without a ranker (a process that wired none) it says so.
	reg, _ := tools.New(memory.Tools(clock)...)
	tl, _ := reg.Lookup("memory_search")
	if _, err := tl.Run(t.Context(), env, json.RawMessage(`{"query":"match"}`)); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("without a ranker: %v", err)
	}
}

// wordRank is a ranker for these tests: passages holding more of the
// query's words (any case, as substrings) first, ties in the order given.
func wordRank(ctx context.Context, query string, ps []view.Passage, limit int) ([]view.Ranked, error) {
	words := strings.Fields(strings.ToLower(query))
	type scored struct{ i, n int }
	var found []scored
	for i, p := range ps {
		n := 0
		for _, w := range words {
			if strings.Contains(strings.ToLower(p.Title+"\n"+p.Text), w) {
				n++
			}
		}
		if n > 0 {
			found = append(found, scored{i, n})
		}
	}
	slices.SortStableFunc(found, func(a, b scored) int { return b.n - a.n })
	var out []view.Ranked
	for _, f := range found[:min(limit, len(found))] {
		out = append(out, view.Ranked{Index: f.i, Snippet: ps[f.i].Text})
	}
	return out, nil
}

func TestUserMemorySave(t *testing.T) {
	env := testEnv(t)
	facts := filepath.Join(env.HomeDir, "users", "owner", "facts")
	runCases(t, env, "user_memory_save", []toolCase{
		{"new file", `{"name":"diet","text":"vegetarian"}`, false, []string{"users/owner/facts/diet.md", "every agent's system prompt"}},
		{"append", `{"name":"diet","text":"no coriander"}`, false, nil},
		{"empty text", `{"name":"diet","text":""}`, true, []string{"text is required"}},
	})
	if got, want := readFile(t, filepath.Join(facts, "diet.md")), "- vegetarian\n- no coriander\n"; got != want {
		t.Errorf("diet.md %q, want %q", got, want)
	}
}

func TestNamesAreNeverPaths(t *testing.T) {
	env := testEnv(t)
	bad := []string{"", "Diet", "../x", "a/b", "diet.md", "-a", "_a", ".hidden", "a b", strings.Repeat("a", 65), "é"}
	for _, name := range bad {
		n, _ := json.Marshal(name)
		for tl, args := range map[string]string{
			"user_memory_save":   fmt.Sprintf(`{"name":%s,"text":"x"}`, n),
			"user_memory_forget": fmt.Sprintf(`{"name":%s}`, n),
			"wiki_get":           fmt.Sprintf(`{"page":%s}`, n),
			"wiki_apply":         fmt.Sprintf(`{"page":%s,"content":"x"}`, n),
		} {
			res := call(t, env, tl, args)
			if !res.IsError || !strings.Contains(res.Output, memory.NamePattern) {
				t.Errorf("%s %s: want a refusal naming the allowed form, got %+v", tl, args, res)
			}
		}
	}
	for _, good := range []string{"a", "0", "diet", "my-diet_2", strings.Repeat("a", 64)} {
		if res := call(t, env, "user_memory_save", fmt.Sprintf(`{"name":%q,"text":"x"}`, good)); res.IsError {
			t.Errorf("name %q refused: %s", good, res.Output)
		}
	}
	var files []string
	filepath.WalkDir(env.HomeDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(env.HomeDir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	for _, f := range files {
		if !strings.HasPrefix(f, "users/owner/facts/") {
			t.Errorf("wrote %s outside the facts folder", f)
		}
	}
}

func TestUserMemoryForget(t *testing.T) {
	facts := func(env tools.Env) string { return filepath.Join(env.HomeDir, "users", "owner", "facts") }
	tests := []struct {
		name    string
		args    string
		isError bool
		want    []string
		diet    string // diet.md afterwards; "-" means removed
	}{
		{"whole file", `{"name":"diet"}`, false, []string{"removed users/owner/facts/diet.md"}, "-"},
		{"lines containing", `{"name":"diet","text":"coriander"}`, false, []string{"removed 2 line(s)"}, "- vegetarian\n"},
		{"case-sensitive", `{"name":"diet","text":"Coriander"}`, true, []string{"no line", "case-sensitive"}, "- vegetarian\n- no coriander\n- coriander, really\n"},
		{"missing file", `{"name":"family"}`, true, []string{"no fact file"}, "- vegetarian\n- no coriander\n- coriander, really\n"},
		{"empty text", `{"name":"diet","text":""}`, true, []string{"leave it out"}, "- vegetarian\n- no coriander\n- coriander, really\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(t)
			writeFile(t, filepath.Join(facts(env), "diet.md"), "- vegetarian\n- no coriander\n- coriander, really\n")
			writeFile(t, filepath.Join(facts(env), "work.md"), "- coriander farm\n")
			writeFile(t, filepath.Join(env.HomeDir, "users", "owner", "USER.md"), "diet\n")
			runCases(t, env, "user_memory_forget", []toolCase{{tc.name, tc.args, tc.isError, tc.want}})
			got := "-"
			if data, err := os.ReadFile(filepath.Join(facts(env), "diet.md")); err == nil {
				got = string(data)
			}
			if got != tc.diet {
				t.Errorf("diet.md %q, want %q", got, tc.diet)
			}
			if readFile(t, filepath.Join(facts(env), "work.md")) != "- coriander farm\n" ||
				readFile(t, filepath.Join(env.HomeDir, "users", "owner", "USER.md")) != "diet\n" {
				t.Error("another file was touched")
			}
		})
	}
}

func TestWiki(t *testing.T) {
	env := testEnv(t)
	page := filepath.Join(env.HomeDir, "wiki", "pasta.md")
	steps := []struct {
		tool string
		toolCase
		page string // the page afterwards; "-" means missing
	}{
		{"wiki_get", toolCase{"missing", `{"page":"pasta"}`, true, []string{`no wiki page "pasta"`}}, "-"},
		{"wiki_apply", toolCase{"append to missing", `{"page":"pasta","append":"x"}`, true, []string{"create it with content"}}, "-"},
		{"wiki_search", toolCase{"empty wiki", `{"query":""}`, false, []string{"no pages yet"}}, "-"},
		{"wiki_apply", toolCase{"create", `{"page":"pasta","content":"# Pasta\nBoil water."}`, false, []string{"created wiki/pasta.md (2 lines)"}}, "# Pasta\nBoil water.\n"},
		{"wiki_apply", toolCase{"append", `{"page":"pasta","append":"Salt it."}`, false, []string{"appended to wiki/pasta.md"}}, "# Pasta\nBoil water.\nSalt it.\n"},
		{"wiki_apply", toolCase{"replace once", `{"page":"pasta","replace":{"old":"Salt it.","new":"Salt it well."}}`, false, []string{"replaced 1 occurrence"}}, "# Pasta\nBoil water.\nSalt it well.\n"},
		{"wiki_apply", toolCase{"replace missing", `{"page":"pasta","replace":{"old":"olive oil","new":"butter"}}`, true, []string{"not found"}}, "# Pasta\nBoil water.\nSalt it well.\n"},
		{"wiki_apply", toolCase{"replace ambiguous", `{"page":"pasta","replace":{"old":"t","new":"T"}}`, true, []string{"occurs", "times"}}, "# Pasta\nBoil water.\nSalt it well.\n"},
		{"wiki_apply", toolCase{"two modes", `{"page":"pasta","content":"x","append":"y"}`, true, []string{"exactly one of"}}, "# Pasta\nBoil water.\nSalt it well.\n"},
		{"wiki_apply", toolCase{"no mode", `{"page":"pasta"}`, true, []string{"exactly one of"}}, "# Pasta\nBoil water.\nSalt it well.\n"},
		{"wiki_apply", toolCase{"replace without new", `{"page":"pasta","replace":{"old":"x"}}`, true, []string{"replace needs old"}}, "# Pasta\nBoil water.\nSalt it well.\n"},
		{"wiki_apply", toolCase{"unknown field in replace", `{"page":"pasta","replace":{"old":"x","new":"y","all":true}}`, true, []string{"unknown field"}}, "# Pasta\nBoil water.\nSalt it well.\n"},
		{"wiki_get", toolCase{"get", `{"page":"pasta"}`, false, []string{"# Pasta\nBoil water.\nSalt it well.\n"}}, "# Pasta\nBoil water.\nSalt it well.\n"},
		{"wiki_apply", toolCase{"overwrite", `{"page":"pasta","content":"# Pasta\nBoil water.\nSalt it.\n"}`, false, []string{"overwrote wiki/pasta.md (3 lines)"}}, "# Pasta\nBoil water.\nSalt it.\n"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			runCases(t, env, s.tool, []toolCase{s.toolCase})
			got := "-"
			if data, err := os.ReadFile(page); err == nil {
				got = string(data)
			}
			if got != s.page {
				t.Errorf("page %q, want %q", got, s.page)
			}
		})
	}
	assertNoTemp(t, filepath.Dir(page))

	writeFile(t, filepath.Join(env.HomeDir, "wiki", "rice.md"), "# Rice\nRinse it. Salt the water.\n")
	writeFile(t, filepath.Join(env.HomeDir, "wiki", "salt-notes.md"), "no heading here\n")
	runCases(t, env, "wiki_search", []toolCase{
		{"passages", `{"query":"SALT"}`, false, []string{"1. wiki/pasta.md:1 — pasta — Pasta (wiki)\n   # Pasta\n   Boil water.\n   Salt it.\n2.",
			"\n2. wiki/rice.md:1 — rice — Rice (wiki)\n", "\n3. wiki/salt-notes.md:1 — salt-notes — salt-notes (wiki)\n"}},
		{"title only", `{"query":"rice"}`, false, []string{"1. wiki/rice.md:1 — rice — Rice (wiki)"}},
		{"list", `{"query":""}`, false, []string{"pasta — Pasta\nrice — Rice\nsalt-notes — salt-notes"}},
		{"none", `{"query":"sushi"}`, false, []string{`no wiki page matches "sushi"`}},
	})
}

// TestWikiSymlinkOutsideHome: a page that links outside the home is neither
// read nor written through; search skips it.
func TestWikiSymlinkOutsideHome(t *testing.T) {
	env := testEnv(t)
	outside := filepath.Join(t.TempDir(), "secret.md")
	writeFile(t, outside, "TOPSECRET\n")
	if err := os.MkdirAll(filepath.Join(env.HomeDir, "wiki"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(env.HomeDir, "wiki", "leak.md")); err != nil {
		t.Skip("no symlinks:", err)
	}
	for tl, args := range map[string]string{
		"wiki_get":    `{"page":"leak"}`,
		"wiki_search": `{"query":"secret"}`,
		"wiki_apply":  `{"page":"leak","append":"pwned"}`,
	} {
		res, err := tool(t, tl).Run(t.Context(), env, json.RawMessage(args))
		if strings.Contains(res.Output, "TOPSECRET") {
			t.Errorf("%s read through the symlink: %s", tl, res.Output)
		}
		if tl != "wiki_search" && err == nil && !res.IsError {
			t.Errorf("%s through the symlink succeeded: %s", tl, res.Output)
		}
	}
	if got := readFile(t, outside); got != "TOPSECRET\n" {
		t.Errorf("outside file changed: %q", got)
	}
}

// TestConcurrentSavesKeepEveryLine: conversations appending to one shared
// file at once lose nothing.
func TestConcurrentSavesKeepEveryLine(t *testing.T) {
	env := testEnv(t)
	save := tool(t, "user_memory_save") // one tool set, as the server builds it
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			args := json.RawMessage(fmt.Sprintf(`{"name":"log","text":"line %d"}`, i))
			if _, err := save.Run(t.Context(), env, args); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := readFile(t, filepath.Join(env.HomeDir, "users", "owner", "facts", "log.md"))
	if n := strings.Count(got, "\n"); n != 20 {
		t.Errorf("%d lines, want 20:\n%s", n, got)
	}
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNameSchemaIsNamePattern: the page and fact names the model is told
// to send (the schema tag, a literal) are the ones checkName accepts.
func TestNameSchemaIsNamePattern(t *testing.T) {
	n := 0
	for _, tl := range memory.Tools(clock) {
		var sc struct {
			Properties map[string]struct{ Pattern string }
		}
		if err := json.Unmarshal(tl.Def().Params, &sc); err != nil {
			t.Fatal(err)
		}
		for arg, p := range sc.Properties {
			if p.Pattern != "" {
				n++
				if p.Pattern != memory.NamePattern {
					t.Errorf("%s %s: pattern %q, want memory.NamePattern %q", tl.Def().Name, arg, p.Pattern, memory.NamePattern)
				}
			}
		}
	}
	if n != 4 {
		t.Errorf("%d name arguments have a pattern, want 4 (user_memory_save, user_memory_forget, wiki_get, wiki_apply)", n)
	}
}
