package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// autonomousMaster makes the master run shell_run without asking.
func autonomousMaster(t *testing.T, home string) {
	t.Helper()
	p := filepath.Join(home, "agent.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "autonomous: false", "autonomous: true", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// procsInDir returns the live processes whose working directory is dir:
// a command's own pids belong to its PID namespace, so it is found from
// outside this way.
func procsInDir(dir string) []int {
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
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil || (cwd != real && cwd != dir) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if _, after, _ := strings.Cut(string(stat), ") "); !strings.HasPrefix(after, "Z") {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// R-SEC / issue 10 item 4, through a real server: the master's shell_run
// cannot read <home>/env next to its workspace, nor the server's
// environment.
func TestServeShellCannotReadEnvFile(t *testing.T) {
	home := initHome(t)
	autonomousMaster(t, home)
	const secret = "plain-value-in-env-9d3e"
	f, err := os.OpenFile(filepath.Join(home, "env"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\nCREW_E2E_VALUE=" + secret + "\n")
	f.Close()
	script := writeScript(t, `
- tool_calls:
    - name: shell_run
      arguments: {command: "cat ../env; cat `+home+`/env; cat ../config.yaml; ls -A ..; tr '\\0' '\\n' < /proc/$PPID/environ; cat /proc/*/environ | tr '\\0' '\\n' | grep -c CREW_E2E"}
- text: "done"
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script, "CREW_E2E_SERVER_ONLY="+secret)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "read the env"})
	c := waitConv(t, s.url, acc["conversation_id"].(string), "settled", settled)
	var result string
	for _, m := range c.History {
		if m.Role == "tool" {
			result = m.Text
		}
	}
	if !strings.Contains(result, "../env: No such file or directory") || !strings.Contains(result, home+"/env: No such file or directory") {
		t.Errorf("the env file was not hidden; tool result:\n%s", result)
	}
	if strings.Contains(result, secret) || strings.Contains(result, "redacted") {
		t.Errorf("the tool result holds the secret:\n%s", result)
	}
	if !strings.Contains(result, "\n0\n") {
		t.Errorf("some /proc/*/environ holds CREW_E2E variables:\n%s", result)
	}
	s.stop(t)
}

// Issue 10 item 5: a command running under shell_run dies with a server
// killed by SIGKILL, leaving no reparented survivor; the record the dead
// server left is cleared by the next start.
func TestCommandsDieWithServer(t *testing.T) {
	home := initHome(t)
	autonomousMaster(t, home)
	ws := filepath.Join(home, "workspace")
	marker := filepath.Join(t.TempDir(), "started")
	script := writeScript(t, `
- tool_calls:
    - name: shell_run
      arguments: {command: "sleep 300 & echo started > `+marker+`; sleep 301", timeout_seconds: 600}
- text: "interrupted"
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)
	postJSON(t, s.url+"/api/inbound", map[string]any{"text": "run it"})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(marker); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never started\n%s", s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	records := filepath.Join(home, "data", "shell")
	for {
		entries, _ := os.ReadDir(records)
		if len(procsInDir(ws)) >= 3 && len(entries) == 1 {
			break // the shell and both sleeps run, and the command is recorded
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v, records %v; want the shell, both sleeps and one record", procsInDir(ws), entries)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.kill9(t)
	deadline = time.Now().Add(10 * time.Second)
	for pids := procsInDir(ws); len(pids) > 0; pids = procsInDir(ws) {
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of the command outlived the server", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s = startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)
	if entries, _ := os.ReadDir(records); len(entries) != 0 {
		t.Errorf("records after restart: %v, want none", entries)
	}
	s.stop(t)
}

// Issue 10 item 4: crew doctor names each shell protection and says whether
// this kernel gives it (this machine, like CI, gives all of them); issue 24:
// it names the network policy of config.yaml.
func TestDoctorListsShellProtections(t *testing.T) {
	home := initHome(t)
	f, err := os.OpenFile(filepath.Join(home, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("shell_ports: [443, 8443]\nshell_hosts: [github.com, \"*.npmjs.org\"]\n")
	f.Close()
	out, _, code := crew(t, home, "doctor")
	if code != 0 {
		t.Fatalf("doctor exited %d\n%s", code, out)
	}
	for _, name := range []string{"mount namespace", "PID namespace", "Landlock", "network namespace", "Unix-socket block", "shell network"} {
		if !strings.Contains(out, "\n  "+name+": yes") {
			t.Errorf("doctor does not report %q as given:\n%s", name, out)
		}
	}
	if !strings.Contains(out, "reach only public addresses on ports 443, 8443 (shell_ports), only github.com, *.npmjs.org (shell_hosts), through crew's proxy") {
		t.Errorf("doctor does not name the network policy:\n%s", out)
	}
	if !strings.Contains(out, "Landlock: yes, ABI ") {
		t.Errorf("doctor does not give the Landlock ABI:\n%s", out)
	}
}
