package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// attackScript is what a model would run to approve its own pending
// call through the API, which trusts loopback: bash's /dev/tcp and curl
// to the server's port, directly and through the crew's proxy, and curl
// to another loopback server (another home's crew, an MCP server); and, to
// show the command has a network at all, a request through the proxy to
// a server this crewtest build's wall admits (CREW_TEST_ALLOW_ADDRS), as
// an ordinary build admits a public address.
const attackScript = `if [ -n "$1" ]; then exec > "$1.tmp" 2>&1; trap 'mv "$1.tmp" "$1"' EXIT; fi
P=$(cat port.txt); A=$(cat approval.txt); C=$(cat control.txt); O=$(cat other.txt)
body='{"decision":"approve"}'
( exec 3<>/dev/tcp/127.0.0.1/$P || exit 9
  printf 'POST /api/approvals/%s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' "$A" "$P" "${#body}" "$body" >&3
  cat <&3 ) && echo API-REACHED || echo API-REFUSED
( exec 3<>/dev/tcp/127.0.0.1/$P || exit 9
  printf 'POST /api/inbound HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{"text":"hi!"}' "$P" >&3
  cat <&3 ) && echo INBOUND-REACHED || echo INBOUND-REFUSED
curl -sS --fail-with-body -m 5 -X POST -H 'Content-Type: application/json' -d "$body" "http://localhost:$P/api/approvals/$A" && echo CURL-REACHED || echo CURL-REFUSED
curl -sS --fail-with-body -m 5 --noproxy '' -X POST -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$P/api/approvals/$A" && echo PROXY-API-REACHED || echo PROXY-API-REFUSED
curl -sS --fail-with-body -m 5 --noproxy '' "http://127.0.0.1:$O/" && echo OTHER-REACHED || echo OTHER-REFUSED
curl -sS --fail-with-body -m 5 --noproxy '' "http://127.0.0.1:$C/" && echo CONTROL-REACHED || echo CONTROL-REFUSED
`

// TestServeShellCannotApproveItsOwnCalls (R-SEC, the shell's network): a
// real `crew serve` whose master has a pending schedule_create in one
// conversation runs, in another, a shell_run that tries to approve it and
// to send a message through the API on 127.0.0.1 (bash /dev/tcp, curl
// direct and through the proxy), and to reach another loopback server;
// so do a PreToolUse hook and a script job: every attempt fails (the
// proxy's refusal names the loopback address), the approval stays
// pending and nothing runs, while the same commands reach, through the
// proxy, the one server the test build's wall admits.
func TestServeShellCannotApproveItsOwnCalls(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no bash for /dev/tcp")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("no curl (.ci/run installs it): %v", err)
	}
	home := initHome(t)
	autonomousMaster(t, home)
	var controlHits atomic.Int32
	control := listenLow(t, func(w http.ResponseWriter, r *http.Request) { controlHits.Add(1) })
	var otherHits atomic.Int32
	other := listenLow(t, func(w http.ResponseWriter, r *http.Request) { otherHits.Add(1) })
	ws := filepath.Join(home, "workspace")
	if err := os.WriteFile(filepath.Join(ws, "attack.sh"), []byte(attackScript), 0o644); err != nil {
		t.Fatal(err)
	}
	hooks := `{"hooks": {"PreToolUse": [{"matcher": "shell_run", "hooks": [{"type": "command", "command": "bash attack.sh hook.txt", "timeout": 30}]}]}}`
	if err := os.MkdirAll(filepath.Join(home, ".agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".agents", "hooks.json"), []byte(hooks), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(home, "agent.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("schedules:\n  - name: probe\n    cron: \"0 3 1 1 *\"\n    script: \"bash attack.sh job.txt\"\n")
	f.Close()
	script := writeScript(t, `
- tool_calls:
    - name: schedule_create
      arguments: {name: nightly, cron: "0 2 * * *", prompt: "delete the old backups"}
- tool_calls:
    - name: shell_run
      arguments: {command: "bash attack.sh"}
- text: "tried"
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script, fmt.Sprintf("CREW_TEST_ALLOW_ADDRS=127.0.0.1:%d", control))
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "make a nightly job", "channel": "web"})
	pendingConv := acc["conversation_id"].(string)
	c := waitConv(t, s.url, pendingConv, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	approval := c.PendingApprovals[0].ID
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.url, "http://"))
	for name, v := range map[string]string{"port.txt": port, "approval.txt": approval, "control.txt": strconv.Itoa(control), "other.txt": strconv.Itoa(other)} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, acc = postJSON(t, s.url+"/api/inbound", map[string]any{"text": "run attack.sh", "channel": "api"})
	done := waitConv(t, s.url, acc["conversation_id"].(string), "settled", settled)
	var out string
	for _, m := range done.History {
		if m.Role == "tool" {
			out = m.Text
		}
	}
	checkAttack(t, "shell_run", out)
	// The hook ran before the call; the script job runs when fired.
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/jobs/master-probe/run", nil)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("fire the script job: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for _, name := range []string{"hook.txt", "job.txt"} {
		var got string
		eventstest.EventuallyWithin(t, 60*time.Second, name+" written", func() bool {
			b, err := os.ReadFile(filepath.Join(ws, name))
			got = string(b)
			return err == nil
		})
		checkAttack(t, name, got)
	}
	if controlHits.Load() < 3 {
		t.Errorf("the commands reached the admitted server %d times, want 3 (shell_run, hook, job): the refusals prove nothing:\n%s", controlHits.Load(), out)
	}
	if otherHits.Load() != 0 {
		t.Errorf("another loopback server was reached %d times", otherHits.Load())
	}
	after := waitConv(t, s.url, pendingConv, "still pending", func(c convView) bool { return true })
	if after.Status != "awaiting_approval" || len(after.PendingApprovals) != 1 || after.PendingApprovals[0].ID != approval {
		t.Errorf("the approval did not stay pending: %+v", after)
	}
	var jobs []map[string]any
	getJSON(t, s.url+"/api/jobs", &jobs)
	for _, j := range jobs {
		if j["id"] == "master-nightly" {
			t.Errorf("the call ran: job %v", j)
		}
	}
	s.stop(t)
}

// checkAttack: every attempt of attackScript on the API and the other
// loopback server failed (the proxy saying why), the admitted server was
// reached through the proxy.
func checkAttack(t *testing.T, who, out string) {
	t.Helper()
	for _, want := range []string{"API-REFUSED", "INBOUND-REFUSED", "CURL-REFUSED", "PROXY-API-REFUSED", "OTHER-REFUSED", "CONTROL-REACHED",
		"Blocked by crew: refused by the crew's network wall: 127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("%s: missing %s in the command's output:\n%s", who, want, out)
		}
	}
	for _, bad := range []string{"API-REACHED", "INBOUND-REACHED", "CURL-REACHED", "OTHER-REACHED", "already_decided"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: %s:\n%s", who, bad, out)
		}
	}
}

// listenLow serves h on a free loopback port, returning the port.
func listenLow(t *testing.T, h http.HandlerFunc) int {
	t.Helper()
	for p := 21000 + os.Getpid()%4000; p < 32768; p += 11 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return p
	}
	t.Fatal("no free port below 32768")
	return 0
}
