// Package teamtest plants, in a git repository, the settings that make git
// run a program — the attacks on create_worktree — for the tests of
// loop/team and of crew serve. Test code only: no binary links it.
package teamtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Kinds are the plants, each a way a repository makes git run a program.
var Kinds = []string{"hook", "filter", "fsmonitor", "sshCommand-gitmodules"}

// HostGitRunsIt reports whether the host's plain git worktree add runs
// the kind (git 2.39's never recurses into submodules).
func HostGitRunsIt(kind string) bool { return kind != "sshCommand-gitmodules" }

// Git runs git in dir on the host, failing the test on an error.
func Git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Repo makes dir a repository with one commit (auth.go) on main.
func Repo(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "auth.go"), []byte("package auth\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q", "-b", "main")
	Git(t, dir, "add", ".")
	Git(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
}

// Payload writes outside/payload.sh: it records that it ran, outside (in
// its own folder, as ran-<kind>) and in the folder it runs in, and copies
// the crew home's env file (found above that folder) into both.
func Payload(t *testing.T, outside string) string {
	t.Helper()
	p := filepath.Join(outside, "payload.sh")
	script := "#!/bin/sh\nk=$1; shift\n" +
		"d=$(dirname \"$0\")\n" +
		"echo ran > \"$d/ran-$k\"; cat ../env ../../env ../../../env >> \"$d/ran-$k\" 2>/dev/null\n" +
		"echo ran > \"ran-$k\"; cat ../env ../../env ../../../env >> \"ran-$k\" 2>/dev/null\n" +
		"cat\n" // a filter passes its input through
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Plant writes into repo one kind of setting that runs payload.
func Plant(t *testing.T, repo, kind, payload string) {
	t.Helper()
	git := func(args ...string) { Git(t, repo, args...) }
	switch kind {
	case "hook":
		for _, h := range []string{"post-checkout", "reference-transaction"} {
			os.WriteFile(filepath.Join(repo, ".git", "hooks", h), []byte("#!/bin/sh\n"+payload+" hook </dev/null\n"), 0o755)
		}
	case "filter":
		git("config", "filter.x.smudge", payload+" filter")
		git("config", "filter.x.required", "true")
		os.MkdirAll(filepath.Join(repo, ".git", "info"), 0o755)
		os.WriteFile(filepath.Join(repo, ".git", "info", "attributes"), []byte("* filter=x\n"), 0o644)
	case "fsmonitor":
		git("config", "core.fsmonitor", payload+" fsmonitor")
	case "sshCommand-gitmodules":
		git("config", "core.sshCommand", payload+" sshCommand-gitmodules")
		git("config", "submodule.recurse", "true")
		os.WriteFile(filepath.Join(repo, ".gitmodules"), []byte("[submodule \"s\"]\n\tpath = s\n\turl = ssh://git.invalid/x\n[submodule \"e\"]\n\tpath = e\n\turl = ext::"+payload+" sshCommand-gitmodules\n"), 0o644)
		head := strings.TrimSpace(Git(t, repo, "rev-parse", "HEAD"))
		git("update-index", "--add", "--cacheinfo", "160000,"+head+",s")
		git("update-index", "--add", "--cacheinfo", "160000,"+head+",e")
		git("add", ".gitmodules")
		git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "submodules")
	default:
		t.Fatalf("no plant %q", kind)
	}
}

// Control plants kind in a scratch repository and has the host's plain git
// add a worktree: the payload must run (written ran-<kind> into outside),
// or a test that it does not run under crew proves nothing. Kinds the
// host's git does not run either are skipped.
func Control(t *testing.T, kind, payload string) {
	t.Helper()
	if !HostGitRunsIt(kind) {
		return
	}
	outside := filepath.Dir(payload)
	ctl := t.TempDir()
	Repo(t, ctl)
	Plant(t, ctl, kind, payload)
	Git(t, ctl, "worktree", "add", "-q", "-b", "wt/ctl", filepath.Join(ctl, ".worktrees", "ctl"), "HEAD")
	if _, err := os.Stat(filepath.Join(outside, "ran-"+kind)); err != nil {
		t.Fatalf("control: the host's git did not run the planted %s, so this test proves nothing: %v", kind, err)
	}
	os.Remove(filepath.Join(outside, "ran-"+kind))
}

// NothingRan fails the test if the payload ran anywhere: a marker beside
// it (outside the workspace) or anywhere under ws, or secret (the canary
// of <home>/env) in any file under ws.
func NothingRan(t *testing.T, payload, ws, secret string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Dir(payload))
	for _, e := range entries {
		if e.Name() != filepath.Base(payload) {
			t.Errorf("the planted program wrote %s outside the workspace", e.Name())
		}
	}
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), "ran-") {
			t.Errorf("the planted program ran (inside the sandbox): %s", p)
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
			t.Errorf("<home>/env was read into %s", p)
		}
		return nil
	})
}
