package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// call runs tool with JSON args and fails the test on a Go error.
func call(t *testing.T, tool Tool, env Env, args string) Result {
	t.Helper()
	res, err := tool.Run(t.Context(), env, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: %v", tool.Def().Name, args, err)
	}
	return res
}

type toolCase struct {
	args    string
	isError bool
	want    []string // substrings of Output
	notWant []string
}

func runCases(t *testing.T, tool Tool, env Env, cases []toolCase) {
	t.Helper()
	for _, tc := range cases {
		res := call(t, tool, env, tc.args)
		if res.IsError != tc.isError {
			t.Errorf("%s %s: IsError %v, want %v: %s", tool.Def().Name, tc.args, res.IsError, tc.isError, res.Output)
		}
		for _, w := range tc.want {
			if !strings.Contains(res.Output, w) {
				t.Errorf("%s %s: output lacks %q:\n%s", tool.Def().Name, tc.args, w, res.Output)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(res.Output, w) {
				t.Errorf("%s %s: output has %q:\n%s", tool.Def().Name, tc.args, w, res.Output)
			}
		}
	}
}

// escapeWorkspace adds symlinks leading out of env's workspace to a
// directory holding a file "secret" with the content TOPSECRET.
func escapeWorkspace(t *testing.T, env Env) (outside string) {
	t.Helper()
	outside = filepath.Join(filepath.Dir(env.Workspace), "outside")
	mustWrite(t, filepath.Join(outside, "secret"), "TOPSECRET\n")
	symlink(t, outside, filepath.Join(env.Workspace, "out"))
	symlink(t, filepath.Join(outside, "secret"), filepath.Join(env.Workspace, "leak.txt"))
	return outside
}

func TestWorkspaceList(t *testing.T) {
	env := newWorkspace(t, map[string]string{"a.txt": "hello", "dir/b.go": "package b", "dir/sub/c": ""})
	escapeWorkspace(t, env)
	os.Mkdir(filepath.Join(env.Workspace, "empty"), 0o755)
	runCases(t, NewFunc[workspaceListArgs](WorkspaceList{}), env, []toolCase{
		{args: `{}`, want: []string{"a.txt\t5 B", "dir/", "out@", "leak.txt@", "empty/"}},
		{args: `{"path":"dir"}`, want: []string{"b.go", "sub/"}},
		{args: `{"path":"empty"}`, want: []string{"empty is empty"}},
		{args: `{"path":"a.txt"}`, isError: true, want: []string{"not a directory"}},
		{args: `{"path":"missing"}`, isError: true, want: []string{"no such file"}},
		{args: `{"path":"out"}`, isError: true, want: []string{"outside the workspace"}, notWant: []string{"secret"}},
		{args: `{"path":"../"}`, isError: true, want: []string{"outside the workspace"}},
		{args: `{"path":"/"}`, isError: true, want: []string{"outside the workspace"}},
	})
}

func TestWorkspaceRead(t *testing.T) {
	var long strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	env := newWorkspace(t, map[string]string{
		"a.txt":    "one\ntwo\nthree\n",
		"long.txt": long.String(),
		"bin.dat":  "abc\x00def",
		"latin1":   "caf\xe9\n",
		"empty":    "",
		"wide.txt": strings.Repeat("é", 3000),
		"crlf.txt": "a\r\nb\r\n",
	})
	escapeWorkspace(t, env)
	huge := filepath.Join(env.Workspace, "huge.txt")
	if err := os.WriteFile(huge, make([]byte, maxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	runCases(t, NewFunc[workspaceReadArgs](WorkspaceRead{}), env, []toolCase{
		{args: `{"path":"a.txt"}`, want: []string{"     1\tone\n     2\ttwo\n     3\tthree"}, notWant: []string{"lines", "\n     4"}},
		{args: `{"path":"long.txt","offset":10,"limit":3}`, want: []string{"    10\tline 10\n    11\tline 11\n    12\tline 12\n[lines 10–12 of 30; call again with offset 13"}},
		{args: `{"path":"long.txt","offset":29}`, want: []string{"    30\tline 30\n[lines 29–30 of 30]"}},
		{args: `{"path":"long.txt","offset":31}`, isError: true, want: []string{"past the end", "30 lines"}},
		{args: `{"path":"crlf.txt"}`, want: []string{"     1\ta\n     2\tb"}, notWant: []string{"\r"}},
		{args: `{"path":"wide.txt"}`, want: []string{"[line cut]"}},
		{args: `{"path":"empty"}`, want: []string{"empty is empty"}},
		{args: `{"path":"bin.dat"}`, isError: true, want: []string{"binary"}},
		{args: `{"path":"latin1"}`, isError: true, want: []string{"binary"}},
		{args: `{"path":"huge.txt"}`, isError: true, want: []string{"over the 10 MiB limit"}},
		{args: `{"path":"."}`, isError: true, want: []string{"directory"}},
		{args: `{"path":"missing.txt"}`, isError: true, want: []string{"no such file"}},
		{args: `{}`, isError: true, want: []string{"path is required"}},
		{args: `{"path":"leak.txt"}`, isError: true, want: []string{"outside the workspace"}, notWant: []string{"TOPSECRET"}},
		{args: `{"path":"out/secret"}`, isError: true, want: []string{"outside the workspace"}, notWant: []string{"TOPSECRET"}},
		{args: `{"path":"../outside/secret"}`, isError: true, want: []string{"outside the workspace"}, notWant: []string{"TOPSECRET"}},
		{args: `{"path":"/etc/passwd"}`, isError: true, want: []string{"outside the workspace"}, notWant: []string{"root:"}},
	})
}

func TestWorkspaceGlob(t *testing.T) {
	env := newWorkspace(t, map[string]string{
		"main.go": "", "a/b.go": "", "a/b/c.go": "", "a/b/c_test.go": "", "docs/x.md": "", "docs/y.txt": "",
		".git/config": "", "node/x.ts": "", "node/y.tsx": "",
	})
	escapeWorkspace(t, env)
	runCases(t, NewFunc[workspaceGlobArgs](WorkspaceGlob{}), env, []toolCase{
		{args: `{"pattern":"**/*.go"}`, want: []string{"a/b.go\na/b/c.go\na/b/c_test.go\nmain.go"}},
		{args: `{"pattern":"*.go"}`, want: []string{"main.go"}, notWant: []string{"a/b.go"}},
		{args: `{"pattern":"a/**/*_test.go"}`, want: []string{"a/b/c_test.go"}, notWant: []string{"c.go\n"}},
		{args: `{"pattern":"docs/*.{md,txt}"}`, want: []string{"docs/x.md\ndocs/y.txt"}},
		{args: `{"pattern":"node/*.{ts,tsx}"}`, want: []string{"node/x.ts\nnode/y.tsx"}},
		{args: `{"pattern":"**/config"}`, want: []string{"no files match"}},
		{args: `{"pattern":".git/*"}`, want: []string{".git/config"}},
		{args: `{"pattern":"**/secret"}`, want: []string{"no files match"}},
		{args: `{"pattern":"*.txt"}`, want: []string{"leak.txt"}},
		{args: `{"pattern":"../**"}`, isError: true, want: []string{".."}},
		{args: `{"pattern":"/etc/*"}`, isError: true, want: []string{"relative"}},
		{args: `{"pattern":"[a"}`, isError: true, want: []string{"bad pattern"}},
		{args: `{"pattern":"{a,b"}`, isError: true, want: []string{"unmatched"}},
	})
}

func TestWorkspaceGrep(t *testing.T) {
	env := newWorkspace(t, map[string]string{
		"a.go":       "package a\n// TODO: one\nfunc A() {}\n",
		"sub/b.go":   "package b\n// todo: two\n",
		"sub/c.txt":  "TODO three\n",
		"bin.dat":    "TODO\x00",
		".git/HEAD":  "TODO git\n",
		"many.txt":   strings.Repeat("hit\n", maxGrepMatches+5),
		"nested/x/y": "TODO deep\n",
	})
	escapeWorkspace(t, env)
	runCases(t, NewFunc[workspaceGrepArgs](WorkspaceGrep{}), env, []toolCase{
		{args: `{"pattern":"TODO"}`, want: []string{"a.go:2: // TODO: one", "sub/c.txt:1: TODO three", "nested/x/y:1: TODO deep", "1 binary or oversized"},
			notWant: []string{"todo: two", "git", "TOPSECRET", "secret"}},
		{args: `{"pattern":"(?i)todo","glob":"*.go"}`, want: []string{"a.go:2:", "sub/b.go:2: // todo: two"}, notWant: []string{"c.txt"}},
		{args: `{"pattern":"TODO","glob":"sub/**"}`, want: []string{"sub/c.txt:1:"}, notWant: []string{"a.go"}},
		{args: `{"pattern":"TODO","path":"sub"}`, want: []string{"sub/c.txt:1:"}, notWant: []string{"a.go"}},
		{args: `{"pattern":"func","path":"a.go"}`, want: []string{"a.go:3: func A() {}"}},
		{args: `{"pattern":"hit","path":"many.txt"}`, want: []string{fmt.Sprintf("stopped at %d matches", maxGrepMatches)}},
		{args: `{"pattern":"nothing here"}`, want: []string{"no matches"}},
		{args: `{"pattern":"TOPSECRET"}`, want: []string{"no matches"}},
		{args: `{"pattern":"("}`, isError: true, want: []string{"invalid regular expression"}},
		{args: `{"pattern":"x","path":"out"}`, isError: true, want: []string{"outside the workspace"}},
		{args: `{"pattern":"x","path":"../outside"}`, isError: true, want: []string{"outside the workspace"}},
		{args: `{"pattern":"x","path":"missing"}`, isError: true, want: []string{"no such file"}},
	})
}

func TestWorkspaceWrite(t *testing.T) {
	env := newWorkspace(t, map[string]string{"exists.sh": "old"})
	outside := escapeWorkspace(t, env)
	os.Chmod(filepath.Join(env.Workspace, "exists.sh"), 0o750)
	runCases(t, NewFunc[writeArgs](WorkspaceWrite{}), env, []toolCase{
		{args: `{"path":"new/deep/f.txt","content":"a\nb\n"}`, want: []string{"created new/deep/f.txt (4 bytes, 2 lines)"}},
		{args: `{"path":"exists.sh","content":"#!/bin/sh\n"}`, want: []string{"overwrote exists.sh"}},
		{args: `{"path":"empty.txt","content":""}`, want: []string{"created empty.txt (0 bytes, 0 lines)"}},
		{args: `{"path":"new","content":"x"}`, isError: true, want: []string{"directory"}},
		{args: `{"path":".","content":"x"}`, isError: true, want: []string{"workspace itself"}},
		{args: `{"path":"out/evil.txt","content":"x"}`, isError: true, want: []string{"outside the workspace"}},
		{args: `{"path":"leak.txt","content":"x"}`, isError: true, want: []string{"outside the workspace"}},
		{args: `{"path":"../outside/evil.txt","content":"x"}`, isError: true, want: []string{"outside the workspace"}},
		{args: `{"path":"` + filepath.Join(outside, "evil.txt") + `","content":"x"}`, isError: true, want: []string{"outside the workspace"}},
	})
	if got := readFile(t, filepath.Join(env.Workspace, "new/deep/f.txt")); got != "a\nb\n" {
		t.Errorf("content %q", got)
	}
	if fi, err := os.Stat(filepath.Join(env.Workspace, "exists.sh")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("overwritten file mode %v, %v; want 0750 kept", fi.Mode(), err)
	}
	if got := readFile(t, filepath.Join(outside, "secret")); got != "TOPSECRET\n" {
		t.Errorf("outside file changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "evil.txt")); err == nil {
		t.Error("a file was written outside the workspace")
	}
	assertNoTempFiles(t, env.Workspace)
}

func TestWorkspaceEdit(t *testing.T) {
	env := newWorkspace(t, map[string]string{
		"a.txt":   "alpha beta\ngamma beta\n",
		"one.txt": "x := 1\n",
		"bin.dat": "a\x00b",
	})
	outside := escapeWorkspace(t, env)
	runCases(t, NewFunc[editArgs](WorkspaceEdit{}), env, []toolCase{
		{args: `{"path":"a.txt","old":"beta","new":"BETA"}`, isError: true, want: []string{"occurs 2 times", "replace_all"}},
		{args: `{"path":"a.txt","old":"delta","new":"x"}`, isError: true, want: []string{"not found"}},
		{args: `{"path":"a.txt","old":"","new":"x"}`, isError: true, want: []string{"must not be empty"}},
		{args: `{"path":"a.txt","old":"beta","new":"beta"}`, isError: true, want: []string{"same"}},
		{args: `{"path":"a.txt","old":"beta"}`, isError: true, want: []string{"required"}},
		{args: `{"path":"a.txt","old":"beta","new":"BETA","replace_all":true}`, want: []string{"replaced 2 occurrences in a.txt"}},
		{args: `{"path":"one.txt","old":"1","new":""}`, want: []string{"replaced 1 occurrence in one.txt"}},
		{args: `{"path":"bin.dat","old":"a","new":"b"}`, isError: true, want: []string{"binary"}},
		{args: `{"path":"missing.txt","old":"a","new":"b"}`, isError: true, want: []string{"no such file"}},
		{args: `{"path":"leak.txt","old":"TOPSECRET","new":"pwned"}`, isError: true, want: []string{"outside the workspace"}},
		{args: `{"path":"out/secret","old":"TOPSECRET","new":"pwned"}`, isError: true, want: []string{"outside the workspace"}},
	})
	if got := readFile(t, filepath.Join(env.Workspace, "a.txt")); got != "alpha BETA\ngamma BETA\n" {
		t.Errorf("a.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(env.Workspace, "one.txt")); got != "x := \n" {
		t.Errorf("one.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(outside, "secret")); got != "TOPSECRET\n" {
		t.Errorf("outside file changed: %q", got)
	}
	assertNoTempFiles(t, env.Workspace)
}

func TestWorkspaceMissingIsHarnessError(t *testing.T) {
	env := Env{Workspace: filepath.Join(t.TempDir(), "gone")}
	tests := []struct {
		tool Tool
		args string
	}{
		{NewFunc[workspaceListArgs](WorkspaceList{}), `{}`},
		{NewFunc[workspaceReadArgs](WorkspaceRead{}), `{"path":"a"}`},
		{NewFunc[workspaceGlobArgs](WorkspaceGlob{}), `{"pattern":"*"}`},
		{NewFunc[workspaceGrepArgs](WorkspaceGrep{}), `{"pattern":"x"}`},
		{NewFunc[writeArgs](WorkspaceWrite{}), `{"path":"a","content":""}`},
		{NewFunc[editArgs](WorkspaceEdit{}), `{"path":"a","old":"x","new":"y"}`},
		{NewFunc[shellArgs](ShellRun{}), `{"command":"true"}`},
	}
	for _, tt := range tests {
		if _, err := tt.tool.Run(t.Context(), env, json.RawMessage(tt.args)); !errors.Is(err, ErrNoWorkspace) {
			t.Errorf("%s: got %v, want ErrNoWorkspace", tt.tool.Def().Name, err)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temp file left behind: %s", p)
		}
		return nil
	})
}
