package tools

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/my-agent-crew/crew/tools/shell/shelltest"
)

// withoutNetworkNamespaces reruns the test in a child of a user namespace
// of its own where no network namespace can be made
// (user.max_net_namespaces 0 there, the host's limit untouched) and
// reports whether this is that child.
func withoutNetworkNamespaces(t *testing.T) bool {
	t.Helper()
	if os.Getenv("CREW_TEST_NO_NETNS") == "1" {
		if err := os.WriteFile("/proc/sys/user/max_net_namespaces", []byte("0\n"), 0); err != nil {
			t.Fatalf("limit network namespaces to none: %v", err)
		}
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CREW_TEST_NO_NETNS=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(err.Error(), "operation not permitted") && os.Getenv("CREW_REQUIRE_NETNS") == "" {
		t.Skipf("no user namespace for the test here: %v", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the test without network namespaces: %v\n%s", err, out)
	}
	return false
}

// Fail closed, saying why: where no network namespace can be made, every
// shell_run is refused — with or without network, sandboxed or not — and
// the refusal names the network namespace and the kernel's answer, not
// "must run sandboxed" or "isolated from the home".
func TestShellRunWithoutANetworkNamespaceSaysWhy(t *testing.T) {
	if !withoutNetworkNamespaces(t) {
		return
	}
	no := false
	for _, pol := range []AgentPolicy{{}, {ShellNetwork: &no}, {ShellWritePaths: []string{"out"}}} {
		env := newWorkspace(t, nil)
		env.Agent = pol
		res, err := NewFunc[shellArgs](ShellRun{Sandbox: shelltest.New(t)}).Run(t.Context(), env, json.RawMessage(`{"command":"echo ran > marker"}`))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"refused: every shell command runs in a network namespace of its own", "no space left on device", "user.max_net_namespaces", "the command was not run"} {
			if !res.IsError || !strings.Contains(res.Output, want) {
				t.Errorf("policy %+v: %q, want an error saying %q", pol, res.Output, want)
			}
		}
		for _, wrong := range []string{"must run sandboxed", "isolated from the home"} {
			if strings.Contains(res.Output, wrong) {
				t.Errorf("policy %+v: %q says %q", pol, res.Output, wrong)
			}
		}
		t.Log(res.Output)
		if _, err := os.Stat(filepath.Join(env.Workspace, "marker")); err == nil {
			t.Errorf("policy %+v: the command ran", pol)
		}
	}
	// crew doctor says the same.
	for _, p := range shelltest.New(t).Protections() {
		if p.Name == "network namespace" && (p.OK || !strings.Contains(p.Detail, "user.max_net_namespaces") || !strings.Contains(p.Detail, "refused")) {
			t.Errorf("doctor: %+v, want no, why, and what is refused", p)
		}
	}
}
