package kit

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/tools/shell/shelltest"
)

// hooksJSON writes <dir>/.agents/hooks.json.
func hooksJSON(t *testing.T, dir, content string) string {
	t.Helper()
	return write(t, dir, ".agents/hooks.json", content)
}

func loadHooks(t *testing.T, home, agent string) *Hooks {
	t.Helper()
	h, err := LoadHooks(shelltest.New(t), home, agent)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHookBlocksToolWithReason(t *testing.T) {
	home, agent := homeAndAgent(t)
	hooksJSON(t, agent, `{"hooks": {"PreToolUse": [{"matcher": "shell_run|workspace_.*", "hooks": [
		{"type": "command", "command": "echo checking; echo 'no pushes on Friday' >&2; exit 2", "timeout": 10}]}]}}`)
	h := loadHooks(t, home, agent)

	outs := h.Run(t.Context(), PreToolUse, "shell_run", map[string]any{"tool_input": map[string]string{"command": "git push"}}, t.TempDir())
	if len(outs) != 1 {
		t.Fatalf("outcomes %+v, want 1", outs)
	}
	o := outs[0]
	if !o.Blocked || o.ExitCode != 2 || o.Reason != "no pushes on Friday" || o.TimedOut {
		t.Errorf("outcome %+v, want blocked with the reason", o)
	}
	if !strings.Contains(o.Output, "checking") || !strings.Contains(o.Output, "no pushes on Friday") {
		t.Errorf("output %q lacks stdout or stderr", o.Output)
	}
	if o.Command != "echo checking; echo 'no pushes on Friday' >&2; exit 2" {
		t.Errorf("command %q", o.Command)
	}
	if reason, blocked := BlockReason(outs); !blocked || reason != "no pushes on Friday" {
		t.Errorf("BlockReason = %q, %v", reason, blocked)
	}

	// The matcher is anchored on the whole name.
	for _, tool := range []string{"web_fetch", "shell_runner", "my_shell_run", ""} {
		if outs := h.Run(t.Context(), PreToolUse, tool, nil, t.TempDir()); len(outs) != 0 {
			t.Errorf("tool %q matched: %+v", tool, outs)
		}
	}
	if outs := h.Run(t.Context(), PreToolUse, "workspace_write", nil, t.TempDir()); len(outs) != 1 || !outs[0].Blocked {
		t.Errorf("workspace_write: %+v, want blocked", outs)
	}
	if outs := h.Run(t.Context(), PostToolUse, "shell_run", nil, t.TempDir()); len(outs) != 0 {
		t.Errorf("a PreToolUse hook ran for PostToolUse: %+v", outs)
	}
}

func TestHookPayloadOnStdin(t *testing.T) {
	home, agent := homeAndAgent(t)
	hooksJSON(t, home, `{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "cat > input.json; pwd > cwd.txt"}]}]}}`)
	h := loadHooks(t, home, agent)
	dir := t.TempDir()

	payload := struct {
		SessionID string          `json:"session_id"`
		ToolInput json.RawMessage `json:"tool_input"`
	}{"conv-1", json.RawMessage(`{"path":"a.txt"}`)}
	outs := h.Run(t.Context(), PostToolUse, "workspace_read", payload, dir)
	if len(outs) != 1 || outs[0].ExitCode != 0 || outs[0].Blocked || outs[0].Reason != "" {
		t.Fatalf("outcomes %+v", outs)
	}
	data, err := os.ReadFile(filepath.Join(dir, "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hook_event_name":"PostToolUse","session_id":"conv-1","tool_input":{"path":"a.txt"},"tool_name":"workspace_read"}`
	if string(data) != want {
		t.Errorf("stdin %s\nwant %s", data, want)
	}
	cwd, err := os.ReadFile(filepath.Join(dir, "cwd.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := filepath.EvalSymlinks(strings.TrimSpace(string(cwd))); got != mustEval(t, dir) {
		t.Errorf("cwd %q, want %q", got, dir)
	}

	// A nil payload still says which event it is; a tool_name the caller
	// gives is kept.
	outs = h.Run(t.Context(), PostToolUse, "x", map[string]string{"tool_name": "mine"}, dir)
	if data, _ := os.ReadFile(filepath.Join(dir, "input.json")); string(data) != `{"hook_event_name":"PostToolUse","tool_name":"mine"}` || len(outs) != 1 {
		t.Errorf("stdin %s", data)
	}
	// A payload that is not an object does not run the hook.
	outs = h.Run(t.Context(), PostToolUse, "x", []int{1}, dir)
	if len(outs) != 1 || outs[0].ExitCode != -1 || !strings.Contains(outs[0].Output, "not a JSON object") {
		t.Errorf("array payload: %+v", outs)
	}
}

func mustEval(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHookTimeoutKillsTheGroup(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	// The shell starts a background sleeper and records its pid, then waits.
	hooksJSON(t, home, `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "sleep 60 & echo $! > child.pid; wait", "timeout": 1}]}]}}`)
	h := loadHooks(t, home, home)

	done := make(chan []Outcome, 1)
	go func() { done <- h.Run(t.Context(), Stop, "", nil, dir) }()
	// The hook runs in its own PID namespace, so the pid it records is not
	// ours: find its processes from outside by their working directory.
	deadline := time.Now().Add(10 * time.Second)
	for len(procsIn(dir)) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the hook and its background sleeper are not seen running")
		}
		time.Sleep(10 * time.Millisecond)
	}
	outs := <-done
	if len(outs) != 1 {
		t.Fatalf("outcomes %+v", outs)
	}
	if o := outs[0]; !o.TimedOut || o.ExitCode != -1 || o.Blocked || !strings.Contains(o.Output, "timeout") {
		t.Errorf("outcome %+v, want timed out", o)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "child.pid")); err != nil {
		t.Fatal(err)
	}
	// The background sleeper was in the hook's process group (and PID
	// namespace), so it is gone (or a zombie waiting for a reaper).
	deadline = time.Now().Add(10 * time.Second)
	for pids := procsIn(dir); len(pids) > 0; pids = procsIn(dir) {
		if time.Now().After(deadline) {
			t.Fatalf("background processes %v of the hook still run", pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// procsIn returns the live processes whose working directory is dir.
func procsIn(dir string) []int {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && (cwd == real || cwd == dir) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z") && !strings.HasPrefix(after, "X")
}

func TestHookOrderAndLevels(t *testing.T) {
	home, agent := homeAndAgent(t)
	hooksJSON(t, home, `{"hooks": {"UserPromptSubmit": [{"hooks": [
		{"type": "command", "command": "echo home-1"}, {"type": "command", "command": "echo home-2"}]}]}}`)
	hooksJSON(t, agent, `{"description": "agent hooks", "hooks": {"UserPromptSubmit": [{"matcher": "ignored[", "hooks": [{"type": "command", "command": "echo agent"}]}]}}`)

	var got []string
	for _, o := range loadHooks(t, home, agent).Run(t.Context(), UserPromptSubmit, "", map[string]string{"prompt": "hi"}, t.TempDir()) {
		got = append(got, strings.TrimSpace(o.Output))
	}
	if strings.Join(got, ",") != "home-1,home-2,agent" {
		t.Errorf("ran %v, want home-1,home-2,agent", got)
	}

	// The master's folder is the home: its hooks run once.
	got = nil
	for _, o := range loadHooks(t, home, home).Run(t.Context(), UserPromptSubmit, "", nil, t.TempDir()) {
		got = append(got, strings.TrimSpace(o.Output))
	}
	if strings.Join(got, ",") != "home-1,home-2" {
		t.Errorf("master ran %v, want home-1,home-2", got)
	}
}

func TestHookExitCodes(t *testing.T) {
	home := t.TempDir()
	hooksJSON(t, home, `{"hooks": {
		"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "exit 2"}]}],
		"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "echo too late >&2; exit 2"}]}],
		"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "echo fine; exit 1"}]}],
		"PreToolUse": [{"hooks": [{"type": "command", "command": "exec /nonexistent/program"}]}]
	}}`)
	h := loadHooks(t, home, "")
	dir := t.TempDir()

	o := h.Run(t.Context(), UserPromptSubmit, "", nil, dir)[0]
	if !o.Blocked || !strings.Contains(o.Reason, "without giving a reason") {
		t.Errorf("silent block: %+v", o)
	}
	o = h.Run(t.Context(), PostToolUse, "anything", nil, dir)[0]
	if o.Blocked || o.ExitCode != 2 || o.Reason != "too late" {
		t.Errorf("PostToolUse exit 2: %+v, want recorded, not blocked", o)
	}
	o = h.Run(t.Context(), Stop, "", nil, dir)[0]
	if o.Blocked || o.ExitCode != 1 || o.Reason != "" || strings.TrimSpace(o.Output) != "fine" {
		t.Errorf("exit 1: %+v", o)
	}
	o = h.Run(t.Context(), PreToolUse, "shell_run", nil, dir)[0]
	if o.Blocked || o.ExitCode != 127 || !strings.Contains(o.Output, "nonexistent") {
		t.Errorf("missing program: %+v", o)
	}
	if _, blocked := BlockReason(h.Run(t.Context(), PreToolUse, "shell_run", nil, dir)); blocked {
		t.Error("BlockReason blocked without a block")
	}
}

func TestHookCannotStart(t *testing.T) {
	home := t.TempDir()
	hooksJSON(t, home, `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`)
	outs := loadHooks(t, home, "").Run(t.Context(), Stop, "", nil, filepath.Join(home, "missing"))
	if len(outs) != 1 || outs[0].ExitCode != -1 || !strings.Contains(outs[0].Output, "could not start") {
		t.Errorf("outcomes %+v", outs)
	}
}

func TestHookEnvironment(t *testing.T) {
	home, agent := homeAndAgent(t)
	t.Setenv("OPENROUTER_API_KEY", "sk-secret")
	hooksJSON(t, agent, `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "env"}]}]}}`)
	out := loadHooks(t, home, agent).Run(t.Context(), Stop, "", nil, t.TempDir())[0].Output
	if strings.Contains(out, "sk-secret") {
		t.Error("a hook saw a secret from the environment")
	}
	for _, w := range []string{"CREW_HOME=" + home, "CREW_AGENT_DIR=" + agent, "PATH="} {
		if !strings.Contains(out, w) {
			t.Errorf("environment lacks %q:\n%s", w, out)
		}
	}
}

func TestHookOutputIsCut(t *testing.T) {
	home := t.TempDir()
	hooksJSON(t, home, `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "head -c 100000 /dev/zero | tr '\\0' x"}]}]}}`)
	o := loadHooks(t, home, "").Run(t.Context(), Stop, "", nil, t.TempDir())[0]
	head, mark, _ := strings.Cut(o.Output, "\n")
	if head != strings.Repeat("x", maxHookOutput) || !strings.Contains(mark, "cut") {
		t.Errorf("output of %d bytes, ends %q", len(o.Output), o.Output[max(0, len(o.Output)-80):])
	}
}

func TestHookCancelledContextRunsNothing(t *testing.T) {
	home := t.TempDir()
	hooksJSON(t, home, `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "touch ran"}]}]}}`)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	dir := t.TempDir()
	if outs := loadHooks(t, home, "").Run(ctx, Stop, "", nil, dir); len(outs) != 0 {
		t.Errorf("outcomes %+v", outs)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the hook ran")
	}
}

func TestNilHooksRunNothing(t *testing.T) {
	var h *Hooks
	if outs := h.Run(t.Context(), PreToolUse, "shell_run", nil, t.TempDir()); outs != nil {
		t.Errorf("outcomes %+v", outs)
	}
	h = loadHooks(t, t.TempDir(), "")
	if outs := h.Run(t.Context(), PreToolUse, "shell_run", nil, t.TempDir()); outs != nil {
		t.Errorf("outcomes %+v", outs)
	}
}

func TestLoadHooksErrors(t *testing.T) {
	tests := []struct {
		name, json string
		want       string // after "<path>"
	}{
		{"syntax", "{\n  \"hooks\": {\n    \"Stop\": [,]\n  }\n}", ":3:14: invalid character ',' looking for beginning of value"},
		{"truncated", "{\"hooks\": {", ":1:11: unexpected end of the file"},
		{"wrong type", "{\n\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"x\", \"timeout\": \"10\"}]}]}}", ":2:81: timeout: want a number, not a string"},
		{"unknown hook", `{"hooks": {"SessionStart": []}}`, `: unknown hook "SessionStart"; the hooks are UserPromptSubmit, PreToolUse, PostToolUse and Stop`},
		{"unknown field", "{\"hooks\": {\"Stop\": [{\"hooks\": [\n  {\"type\": \"command\", \"command\": \"x\", \"async\": true}]}]}}", `:2:39: unknown field "async"`},
		{"bad type", `{"hooks": {"Stop": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}`, `: hooks.Stop[0].hooks[0]: type "prompt" is not supported`},
		{"empty command", `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": " "}]}]}}`, `: hooks.Stop[0].hooks[0]: command is empty`},
		{"bad matcher", `{"hooks": {"PreToolUse": [{"matcher": "shell_(", "hooks": []}]}}`, `: hooks.PreToolUse[0]: matcher "shell_(" is not a valid Go regular expression`},
		{"bad timeout", `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}`, `: hooks.Stop[0].hooks[0]: timeout -1 is not between 0 and 600 seconds`},
		{"trailing", `{"hooks": {}} {}`, `: trailing data after the JSON object`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home, agent := homeAndAgent(t)
			hooksJSON(t, home, `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`)
			path := hooksJSON(t, agent, tc.json)
			h, err := LoadHooks(shelltest.New(t), home, agent)
			if err == nil {
				t.Fatal("no error")
			}
			if h != nil {
				t.Error("hooks returned with an error")
			}
			if !strings.HasPrefix(err.Error(), path+tc.want) {
				t.Errorf("error %q\nwant %q", err, path+tc.want)
			}
		})
	}
}

func TestLoadHooksEmptyFile(t *testing.T) {
	home := t.TempDir()
	hooksJSON(t, home, "\n")
	if _, err := LoadHooks(nil, home, ""); err != nil {
		t.Error(err)
	}
	hooksJSON(t, home, "{}")
	if _, err := LoadHooks(nil, home, ""); err != nil {
		t.Error(err)
	}
}

// A hook that cannot run isolated from the home (here: a home the shell
// cannot cover) blocks what it could block, with the reason: the owner's
// guard never silently goes missing.
func TestHookThatCannotRunIsolatedBlocks(t *testing.T) {
	t.Chdir(t.TempDir())
	hooksJSON(t, "home", `{"hooks": {
		"PreToolUse": [{"hooks": [{"type": "command", "command": "touch ran"}]}],
		"Stop": [{"hooks": [{"type": "command", "command": "touch ran"}]}]}}`)
	h := loadHooks(t, "home", "")
	dir := t.TempDir()
	outs := h.Run(t.Context(), PreToolUse, "shell_run", nil, dir)
	if len(outs) != 1 || !outs[0].Blocked || outs[0].ExitCode != -1 || !strings.Contains(outs[0].Reason, "could not run isolated") {
		t.Errorf("PreToolUse outcomes %+v, want blocked with the reason", outs)
	}
	if outs := h.Run(t.Context(), Stop, "", nil, dir); len(outs) != 1 || outs[0].Blocked || outs[0].ExitCode != -1 {
		t.Errorf("Stop outcomes %+v, want failed, not blocked", outs)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the hook ran")
	}
}

// Hooks see the home as the agent's shell_run does: the kits they live in
// and the agent's folder, not the env file, other agents or data/.
func TestHookSeesItsKitsNotTheHome(t *testing.T) {
	home, agent := homeAndAgent(t)
	const secret = "sk-hook-secret-0b7d"
	write(t, home, "env", "OPENROUTER_API_KEY="+secret+"\n")
	write(t, home, "data/projections.db", secret)
	write(t, home, "agents/other/MEMORY.md", secret)
	write(t, home, ".agents/guard.sh", "echo home guard\n")
	write(t, agent, ".agents/guard.sh", "echo agent guard\n")
	write(t, agent, "workspace/file.txt", "in the workspace\n")
	hooksJSON(t, agent, `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command":
		"sh \"$CREW_HOME/.agents/guard.sh\"; sh \"$CREW_AGENT_DIR/.agents/guard.sh\"; cat file.txt; cat \"$CREW_HOME/env\" \"$CREW_HOME/data/projections.db\" \"$CREW_HOME/agents/other/MEMORY.md\" ../../../env"}]}]}}`)
	o := loadHooks(t, home, agent).Run(t.Context(), Stop, "", nil, filepath.Join(agent, "workspace"))[0]
	for _, want := range []string{"home guard\n", "agent guard\n", "in the workspace\n", "env: No such file"} {
		if !strings.Contains(o.Output, want) {
			t.Errorf("hook output lacks %q:\n%s", want, o.Output)
		}
	}
	if strings.Contains(o.Output, secret) {
		t.Errorf("a hook read a secret of the home:\n%s", o.Output)
	}
}
