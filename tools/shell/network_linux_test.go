package shell

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The network tests build a small internet of their own: a test host in a
// network namespace made by the test, at a public address (publicIP, as
// far as the wall can tell), joined by a veth pair to a second namespace
// made by the test, where the test binary runs again as "the server" and
// runs the shell commands. The second namespace has no other interface
// than loopback and that veth, and no route but the veth's /24: nothing
// the test sends can leave the machine.
const (
	publicIP   = "11.22.33.44" // the test host
	serverSide = "11.22.33.1"  // the server's end of the veth
	hostsFile  = "127.0.0.1 localhost\n" + publicIP + " public.test\n10.0.0.1 internal.test\n"
)

// The test host: HELLO-PUBLIC over http on 80 and 8080 and https on 443,
// until its stdin closes (its parent died or is done) or a minute passes.
func init() {
	switch os.Getenv("CREW_SHELL_HELPER") {
	case "public-host":
	case "get":
		// A Go program: net/http's default transport honours the proxy
		// variables, like the go command does.
		resp, err := http.Get(os.Args[1])
		if err != nil {
			fmt.Println("get:", err)
			os.Exit(3)
		}
		io.Copy(os.Stdout, resp.Body)
		os.Exit(0)
	default:
		return
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "HELLO-PUBLIC %s %s\n", r.Host, r.URL.Path)
	})
	for _, port := range []string{"80", "8080"} {
		l, err := net.Listen("tcp", "0.0.0.0:"+port)
		if err != nil {
			fmt.Println("listen:", err)
			os.Exit(3)
		}
		go http.Serve(l, h)
	}
	l, err := net.Listen("tcp", "0.0.0.0:443")
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(3)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener = l
	s.StartTLS()
	fmt.Println("ready")
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
	}
	os.Exit(0)
}

// testNet makes the two namespaces and the test host; it returns the
// server namespace's name. Skipped where ip or root is missing, unless
// CREW_REQUIRE_NETNS is set (CI), where that fails.
func testNet(t *testing.T) string {
	t.Helper()
	ip, err := exec.LookPath("ip")
	if err != nil || os.Geteuid() != 0 {
		if os.Getenv("CREW_REQUIRE_NETNS") != "" {
			t.Fatalf("the network tests need root and ip (iproute2): euid %d, %v", os.Geteuid(), err)
		}
		t.Skipf("the network tests need root and ip (iproute2): euid %d, %v", os.Geteuid(), err)
	}
	id := strconv.Itoa(os.Getpid())
	srvNS, hostNS := "crewt-s-"+id, "crewt-h-"+id
	vs, vh := "cvs"+id, "cvh"+id
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	sh("netns", "add", srvNS)
	t.Cleanup(func() { exec.Command(ip, "netns", "del", srvNS).Run() })
	sh("netns", "add", hostNS)
	t.Cleanup(func() { exec.Command(ip, "netns", "del", hostNS).Run() })
	sh("link", "add", vs, "netns", srvNS, "type", "veth", "peer", "name", vh, "netns", hostNS)
	sh("-n", srvNS, "addr", "add", serverSide+"/24", "dev", vs)
	sh("-n", hostNS, "addr", "add", publicIP+"/24", "dev", vh)
	for ns, dev := range map[string]string{srvNS: vs, hostNS: vh} {
		sh("-n", ns, "link", "set", "lo", "up")
		sh("-n", ns, "link", "set", dev, "up")
	}
	// ip netns exec mounts /etc/netns/<name>/hosts over /etc/hosts.
	etc := filepath.Join("/etc/netns", srvNS)
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(etc) })
	if err := os.WriteFile(filepath.Join(etc, "hosts"), []byte(hostsFile), 0o644); err != nil {
		t.Fatal(err)
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host := exec.Command(ip, "netns", "exec", hostNS, self)
	host.Env = append(os.Environ(), "CREW_SHELL_HELPER=public-host", "GORACE=atexit_sleep_ms=0")
	stdin, err := host.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); host.Process.Kill(); host.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("the test host did not start: %q", line)
	}
	return srvNS
}

// inServerNS runs the test named name again inside ns, with
// CREW_SHELL_NETNS set, and fails with its output if it fails.
func inServerNS(t *testing.T, ns, name string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, self, "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CREW_SHELL_NETNS="+ns, "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s in the server's namespace: %v\n%s", name, err, out)
	}
	t.Logf("%s", out)
}

// loopbackSecret serves body on a loopback port of the server's
// namespace: the crew's API, another home's server, an MCP server.
func loopbackSecret(t *testing.T, body string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// attempts runs script (sections "== name" followed by what was printed
// and "exit=N") in a command with network and returns each section, and
// what the proxy refused.
func attempts(t *testing.T, box *Sandbox, f facility, script string, pol *Policy) (map[string]string, []string) {
	t.Helper()
	ws := t.TempDir()
	if pol != nil {
		pol.WritePaths = []string{ws}
	}
	out, err := box.run(t.Context(), Command{Script: script, Dir: ws, Env: Environ(os.Environ()), Sandbox: pol, Timeout: 120 * time.Second}, f)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var name string
	for _, line := range strings.SplitAfter(out.Text, "\n") {
		if n, ok := strings.CutPrefix(line, "== "); ok {
			name = strings.TrimSpace(n)
			continue
		}
		got[name] += line
	}
	return got, out.Refused
}

// try is the shell function the scripts use: one named attempt.
const try = `try() { n=$1; shift; echo "== $n"; "$@" 2>&1; echo "exit=$?"; }
`

// TestNetworkedShellReachesOnlyThePublicInternet: a command with network
// (unsandboxed, and sandboxed with network; in each namespace mode) tries
// with curl, through the proxy and around it, the server's own port,
// another loopback port, the cloud metadata address, a private address and
// a name that the namespace's /etc/hosts gives a private address: each
// fails, and nothing of those servers comes back. The test host's public
// address is reached through the proxy, over http and https, by address
// and by name, and not around it; /proc/net/tcp shows none of the
// server's listeners.
func TestNetworkedShellReachesOnlyThePublicInternet(t *testing.T) {
	box := newSandbox(t)
	if os.Getenv("CREW_SHELL_NETNS") == "" {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Fatalf("no curl: %v", err)
		}
		inServerNS(t, testNet(t), t.Name())
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	api := loopbackSecret(t, "SECRET-API")
	other := loopbackSecret(t, "SECRET-OTHER")
	c := "curl -sS --fail-with-body -m 10 "
	direct := c + "--noproxy '*' "
	// Through the proxy even where NO_PROXY (the namespace's own
	// loopback) would go direct.
	via := c + "--noproxy '' "
	script := try + fmt.Sprintf(`try api-via-proxy %[1]s http://127.0.0.1:%[3]d/api/approvals
try api-https-via-proxy %[1]s -k https://127.0.0.1:%[3]d/
try api-by-name-via-proxy %[1]s http://localhost:%[3]d/
try api-by-name curl -sS -m 10 http://localhost:%[3]d/
try api-direct %[2]s http://127.0.0.1:%[3]d/
try other-loopback-via-proxy %[1]s http://127.0.0.1:%[4]d/
try other-loopback-direct %[2]s http://127.0.0.1:%[4]d/
try metadata-via-proxy %[1]s http://169.254.169.254/latest/meta-data/
try metadata-direct %[2]s http://169.254.169.254/latest/meta-data/
try private-via-proxy %[1]s http://10.0.0.1/
try private-https-via-proxy %[1]s https://10.0.0.1/
try private-direct %[2]s http://10.0.0.1/
try private-name-via-proxy %[1]s http://internal.test/
try private-name-direct %[2]s http://internal.test/
try public-via-proxy %[1]s http://%[5]s/x
try public-https-via-proxy %[1]s -k https://%[5]s/y
try public-name-via-proxy %[1]s http://public.test/z
try public-direct %[2]s http://%[5]s/
try public-other-port %[1]s http://%[5]s:8080/
try public-go-client env CREW_SHELL_HELPER=get GORACE=atexit_sleep_ms=0 %[6]s http://public.test/go
try proc-net-tcp cat /proc/net/tcp /proc/net/tcp6
`, via, direct, api, other, publicIP, strconv.Quote(self))
	if _, err := exec.LookPath("bash"); err == nil {
		script += fmt.Sprintf("try api-dev-tcp bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo OPEN'\n", api)
	}
	refused := map[string]string{
		"api-via-proxy":            "loopback",
		"api-https-via-proxy":      "CONNECT tunnel failed, response 403",
		"api-by-name-via-proxy":    "loopback",
		"api-by-name":              "", // NO_PROXY: the namespace's own loopback, where nothing listens
		"api-direct":               "",
		"other-loopback-via-proxy": "loopback",
		"other-loopback-direct":    "",
		"metadata-via-proxy":       "cloud metadata",
		"metadata-direct":          "",
		"private-via-proxy":        "private",
		"private-https-via-proxy":  "CONNECT tunnel failed, response 403",
		"private-direct":           "",
		"private-name-via-proxy":   "private",
		"private-name-direct":      "",
		"public-direct":            "",
		"public-other-port":        "port 8080",
		"api-dev-tcp":              "",
	}
	for name, f := range facilities(t) {
		for pname, pol := range map[string]func() *Policy{"unsandboxed": func() *Policy { return nil }, "sandboxed": func() *Policy { return &Policy{Network: true} }} {
			t.Run(name+"/"+pname, func(t *testing.T) {
				got, _ := attempts(t, box, f, script, pol())
				for attempt, class := range refused {
					out, ok := got[attempt]
					if !ok {
						if attempt != "api-dev-tcp" {
							t.Errorf("%s: not tried", attempt)
						}
						continue
					}
					if strings.Contains(out, "SECRET") || strings.Contains(out, "HELLO-PUBLIC") || strings.Contains(out, "OPEN") {
						t.Errorf("%s: reached: %s", attempt, out)
					}
					if strings.Contains(out, "exit=0\n") || !strings.Contains(out, class) {
						t.Errorf("%s: %s, want a failure naming %q", attempt, out, class)
					}
				}
				for attempt, want := range map[string]string{
					"public-via-proxy":       "HELLO-PUBLIC " + publicIP + " /x",
					"public-https-via-proxy": "HELLO-PUBLIC " + publicIP + " /y",
					"public-name-via-proxy":  "HELLO-PUBLIC public.test /z",
					"public-go-client":       "HELLO-PUBLIC public.test /go",
				} {
					if out := got[attempt]; !strings.Contains(out, want) || !strings.Contains(out, "exit=0") {
						t.Errorf("%s: %s, want %q", attempt, out, want)
					}
				}
				tcp := got["proc-net-tcp"]
				for _, port := range []int{api, other} {
					if strings.Contains(tcp, fmt.Sprintf(":%04X ", port)) {
						t.Errorf("/proc/net/tcp shows the server's listener on %d:\n%s", port, tcp)
					}
				}
				if strings.Contains(tcp, "0121160B:") || !strings.Contains(tcp, "0100007F:0C38 00000000:0000 0A") {
					t.Errorf("/proc/net/tcp: want the proxy's listener (127.0.0.1:3128) and nothing of the server's:\n%s", tcp)
				}
			})
		}
	}
}

// TestShellPortsAndHostsNarrowTheProxy: with shell_ports [8080] and
// shell_hosts [public.test, *.example.org], a command reaches the test
// host by that name on 8080 only; its address, port 80 and a name the
// list does not hold are refused by the proxy, saying which setting.
func TestShellPortsAndHostsNarrowTheProxy(t *testing.T) {
	if os.Getenv("CREW_SHELL_NETNS") == "" {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Fatalf("no curl: %v", err)
		}
		inServerNS(t, testNet(t), t.Name())
		return
	}
	box, err := New(Network{Ports: []int{8080}, Hosts: []string{"public.test", "*.example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	c := "curl -sS --fail-with-body -m 10 "
	script := try + fmt.Sprintf(`try listed-name-listed-port %[1]s http://public.test:8080/a
try listed-name-https-other-port %[1]s -k https://public.test/
try listed-name-other-port %[1]s http://public.test/
try address-not-listed %[1]s http://%[2]s:8080/
try name-not-listed %[1]s http://other.test:8080/
`, c, publicIP)
	f := box.probed()
	got, refused := attempts(t, box, f, script, nil)
	if out := got["listed-name-listed-port"]; !strings.Contains(out, "HELLO-PUBLIC public.test:8080 /a") {
		t.Errorf("listed-name-listed-port: %s", out)
	}
	for attempt, want := range map[string]string{
		"listed-name-https-other-port": "CONNECT tunnel failed, response 403",
		"listed-name-other-port":       "is on port 80; only public addresses on port 8080 are reached",
		"address-not-listed":           publicIP + " is not in shell_hosts; only public.test, *.example.org are reached",
		"name-not-listed":              "other.test is not in shell_hosts",
	} {
		if out := got[attempt]; !strings.Contains(out, want) || strings.Contains(out, "HELLO") || strings.Contains(out, "exit=0\n") {
			t.Errorf("%s: %s, want a refusal with %q", attempt, out, want)
		}
	}
	// What curl reports only as a 403 on CONNECT, the command's output
	// says: the proxy's refusals, each once.
	if want := "public.test (11.22.33.44:443) is on port 443; only public addresses on port 8080 are reached"; !slices.ContainsFunc(refused, func(r string) bool { return strings.Contains(r, want) }) || len(refused) != 4 {
		t.Errorf("Output.Refused = %q, want the 4 refusals, one with %q", refused, want)
	}
}

// BenchmarkRunWithoutNetwork is `exit 0` without network: its own empty
// network namespace, the baseline of BenchmarkRunNetworked.
func BenchmarkRunWithoutNetwork(b *testing.B) {
	box := newSandbox(b)
	if box.probed().abiErr != nil {
		b.Skip("no Landlock")
	}
	for b.Loop() {
		if _, err := box.Run(b.Context(), Command{Script: "exit 0", Dir: "/", Sandbox: &Policy{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunNetworked is the same command with network: its namespace
// also gets the proxy's listener, handed back and served for its life.
func BenchmarkRunNetworked(b *testing.B) {
	box := newSandbox(b)
	if box.probed().abiErr != nil {
		b.Skip("no Landlock")
	}
	for b.Loop() {
		if _, err := box.Run(b.Context(), Command{Script: "exit 0", Dir: "/", Sandbox: &Policy{Network: true}}); err != nil {
			b.Fatal(err)
		}
	}
}
