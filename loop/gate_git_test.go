package loop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/my-agent-crew/crew/tools"
)

// A file-tool write that changes what runs when git or a shell opens the
// folder — under .git/ (config, hooks, info, modules) or a .git file,
// .gitattributes, .gitmodules, .envrc, at any depth, also reached through
// a symlink — asks with that reason even in an autonomous conversation;
// its neighbours do not.
func TestWritesThatChangeWhatRunsAskEvenWhenAutonomous(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	os.Symlink(".git", filepath.Join(ws, "innocent"))
	os.WriteFile(filepath.Join(ws, ".gitattributes"), nil, 0o644)
	os.Symlink(".gitattributes", filepath.Join(ws, "notes.txt"))
	env := tools.Env{Workspace: ws, Agent: tools.AgentPolicy{}}
	write := func(path string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"path": path, "content": "x"})
		return b
	}
	edit := func(path string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"path": path, "old": "a", "new": "b"})
		return b
	}
	asks := []string{".git/config", ".git/hooks/post-checkout", ".git/info/attributes", ".git/modules/s/config",
		"./.git/config", "sub/../.git/config", ".gitattributes", "sub/.gitattributes", ".gitmodules", ".envrc", "sub/.envrc",
		".worktrees/wt1/.git", "innocent/config", "notes.txt", filepath.Join(ws, ".git", "config")}
	runs := []string{"README.md", "sub/config", "git/config", ".gitignore", "src/.github/workflows/x.yml", "envrc"}
	for _, tool := range tools.Builtins(tools.Services{}) {
		args := write
		switch tool.Def().Name {
		case "workspace_write":
		case "workspace_edit":
			args = edit
		default:
			continue
		}
		for _, p := range asks {
			if v, reason := Gate(tool, env, args(p), true, []string{tool.Def().Name}); v != Ask || reason != tools.RunsWhenOpened {
				t.Errorf("%s %s, autonomous and auto-approved: %v %q, want Ask %q", tool.Def().Name, p, v, reason, tools.RunsWhenOpened)
			}
		}
		for _, p := range runs {
			if v, reason := Gate(tool, env, args(p), true, nil); v != Run {
				t.Errorf("%s %s, autonomous: %v %q, want Run", tool.Def().Name, p, v, reason)
			}
		}
	}
}
