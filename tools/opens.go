package tools

import (
	"path/filepath"
	"slices"
	"strings"
)

// RunsWhenOpened is the ask reason of a file-tool write that changes what
// runs when git or a shell opens the folder: anything under a .git folder
// (config, hooks/, info/attributes, modules/) or a .git file (which names
// the git folder), .gitattributes (filter drivers), .gitmodules
// (submodule URLs) and .envrc (direnv), at any depth. Such a write asks
// even in an autonomous conversation: a page the agent read must not turn
// a file write into a program the next git command runs.
const RunsWhenOpened = "changes what runs when git or a shell opens this folder"

// opensToRun are the file names git or a shell acts on when it opens a
// folder, besides what lies under .git.
var opensToRun = []string{".gitattributes", ".gitmodules", ".envrc"}

// RunsWhenOpenedReason returns RunsWhenOpened when rel — a path a file
// tool would write in env's workspace, as given or after resolving its
// symlinks — is one that changes what runs when git or a shell opens the
// folder, and "" otherwise (also when rel leaves the workspace: Check
// refuses that).
func RunsWhenOpenedReason(env Env, rel string) string {
	paths := []string{filepath.Clean(rel)}
	if abs, err := Resolve(env.Workspace, rel); err == nil {
		if root, err := workspaceRoot(env.Workspace); err == nil {
			if r, err := filepath.Rel(root, abs); err == nil {
				paths = append(paths, r)
			}
		}
	}
	for _, p := range paths {
		parts := strings.Split(filepath.ToSlash(p), "/")
		if slices.Contains(parts, ".git") || slices.Contains(opensToRun, parts[len(parts)-1]) {
			return RunsWhenOpened
		}
	}
	return ""
}
