package home

import (
	"net"
	"os"
	"strings"
	"testing"
)

// An unspecified listen address is reached, and named, as 127.0.0.1.
func TestReachableURL(t *testing.T) {
	for addr, want := range map[string]string{"0.0.0.0:7420": "http://127.0.0.1:7420", "[::]:80": "http://127.0.0.1:80", "127.0.0.1:9": "http://127.0.0.1:9", "[::1]:9": "http://[::1]:9"} {
		a, _ := net.ResolveTCPAddr("tcp", addr)
		if got := ReachableURL(a); got != want {
			t.Errorf("ReachableURL(%s) = %s, want %s", addr, got, want)
		}
	}
}

// Issue 28: serve --listen 0.0.0.0:P prints one /login URL per address
// of the machine (not loopback, not link-local), and the machine's name
// only when web.hosts lets the server answer to it; a named host gets its
// own URL.
func TestLoginHintNamesEveryAddressOfTheMachine(t *testing.T) {
	h := authHome(t, "", "")
	ln := &net.TCPAddr{IP: net.IPv4zero, Port: 7420}
	hint := h.LoginHint("0.0.0.0:7420", ln)
	addrs := MachineAddrs(true)
	for _, a := range addrs {
		if !strings.Contains(hint, "http://"+a+":7420/login") {
			t.Errorf("hint lacks the address %s: %q", a, hint)
		}
	}
	if len(addrs) == 0 && !strings.Contains(hint, "http://127.0.0.1:7420/login") {
		t.Errorf("no address but loopback: hint %q", hint)
	}
	if strings.Contains(hint, "<this machine's address>") || strings.Contains(hint, "127.0.0.1:7420") && len(addrs) > 0 || strings.Contains(hint, "0.0.0.0:7420/login") {
		t.Errorf("hint = %q", hint)
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		t.Skip("no hostname")
	}
	if strings.Contains(hint, "http://"+name+":7420/login with") || !strings.Contains(hint, "add \""+name+"\" to web.hosts") {
		t.Errorf("the name %s is not in web.hosts: hint %q, want it named as something to add", name, hint)
	}
	h.Config.Web.Hosts = []string{name}
	if hint := h.LoginHint("0.0.0.0:7420", ln); !strings.Contains(hint, "http://"+name+":7420/login") {
		t.Errorf("with %s in web.hosts: hint %q", name, hint)
	}
	if hint := h.LoginHint("192.0.2.7:7420", &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 7420}); !strings.Contains(hint, "Log in at http://192.0.2.7:7420/login with") {
		t.Errorf("a named address: %q", hint)
	}
}
