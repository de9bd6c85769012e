package browser

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/my-agent-crew/crew/tools/web/wall"
)

// TestBrowserProxyRefusesStrangersAndLoopback tries the browser proxy as
// another local process and as a page would: without its credential
// nothing is forwarded (407); with it, a plain request, a WebSocket
// upgrade and a CONNECT tunnel to a loopback listener are all refused
// (403) by the wall before the listener sees a connection, and an
// origin-form request is not proxied anywhere.
func TestBrowserProxyRefusesStrangersAndLoopback(t *testing.T) {
	var hits, conns atomic.Int32
	target := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	target.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	target.Start()
	defer target.Close()
	p, err := newProxy(wall.New())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	host := strings.TrimPrefix(target.URL, "http://")
	cred := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(p.user+":"+p.pass)) + "\r\n"
	wrong := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(p.user+":guess")) + "\r\n"
	for _, c := range []struct {
		name, req string
		want      int
	}{
		{"GET without credential", "GET " + target.URL + "/ HTTP/1.1\r\nHost: " + host + "\r\n\r\n", http.StatusProxyAuthRequired},
		{"GET with a wrong credential", "GET " + target.URL + "/ HTTP/1.1\r\nHost: " + host + "\r\n" + wrong + "\r\n", http.StatusProxyAuthRequired},
		{"CONNECT without credential", "CONNECT " + host + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n", http.StatusProxyAuthRequired},
		{"GET to loopback", "GET " + target.URL + "/ HTTP/1.1\r\nHost: " + host + "\r\n" + cred + "\r\n", http.StatusForbidden},
		{"WebSocket to loopback", "GET " + target.URL + "/ws HTTP/1.1\r\nHost: " + host + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" + cred + "\r\n", http.StatusForbidden},
		{"CONNECT to loopback", "CONNECT " + host + " HTTP/1.1\r\nHost: " + host + "\r\n" + cred + "\r\n", http.StatusForbidden},
		{"CONNECT to IPv4-mapped loopback", "CONNECT [::ffff:127.0.0.1]:" + fmt.Sprint(target.Listener.Addr().(*net.TCPAddr).Port) + " HTTP/1.1\r\nHost: x\r\n" + cred + "\r\n", http.StatusForbidden},
		{"origin-form request", "GET / HTTP/1.1\r\nHost: " + host + "\r\n" + cred + "\r\n", http.StatusBadRequest},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(p.Addr(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(conn, c.req)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if resp.StatusCode != c.want {
			t.Errorf("%s: %s, want %d", c.name, resp.Status, c.want)
		}
	}
	if hits.Load() != 0 || conns.Load() != 0 {
		t.Errorf("the loopback listener saw %d connections and %d requests through the proxy", conns.Load(), hits.Load())
	}
}
