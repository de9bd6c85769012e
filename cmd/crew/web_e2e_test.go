package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeFetchURLBehindTheWall (R-SEC-2, R-SEC-1), through a real server
// built with -tags crewtest: fetch_url reads a local page only because its
// exact host:port is in CREW_TEST_ALLOW_ADDRS, fenced with title and URL;
// another loopback port, and a redirect from the admitted page to it, are
// refused by the wall; web_search with no provider says so.
func TestServeFetchURLBehindTheWall(t *testing.T) {
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "SECRET-INTERNAL") }))
	defer secret.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<html><head><title>Local page</title></head><body><h1>Hello from the test site</h1></body></html>`)
	})
	mux.HandleFunc("/jump", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, secret.URL+"/", http.StatusFound) })
	site := httptest.NewServer(mux)
	defer site.Close()

	home := initHome(t)
	script := writeScript(t, `
- tool_calls:
    - name: fetch_url
      arguments: {url: "`+site.URL+`/page"}
- tool_calls:
    - name: fetch_url
      arguments: {url: "`+secret.URL+`/"}
- tool_calls:
    - name: fetch_url
      arguments: {url: "`+site.URL+`/jump"}
- tool_calls:
    - name: web_search
      arguments: {query: "anything"}
- text: "done"
`)
	addr := strings.TrimPrefix(site.URL, "http://")
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script, "CREW_TEST_ALLOW_ADDRS="+addr)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "read it"})
	c := waitConv(t, s.url, acc["conversation_id"].(string), "settled", settled)
	var results []string
	for _, m := range c.History {
		if m.Role == "tool" {
			results = append(results, m.Text)
		}
	}
	if len(results) != 4 {
		t.Fatalf("tool results %q", results)
	}
	if !strings.Contains(results[0], "Title: Local page") || !strings.Contains(results[0], "<<<UNTRUSTED DATA id=") || !strings.Contains(results[0], "# Hello from the test site") {
		t.Errorf("admitted page:\n%s", results[0])
	}
	for i, r := range results[1:3] {
		if !strings.Contains(r, "refused by the crew's network wall") || strings.Contains(r, "SECRET-INTERNAL") {
			t.Errorf("result %d reached the non-admitted port:\n%s", i+1, r)
		}
	}
	if !strings.Contains(results[3], "no search provider is configured") {
		t.Errorf("web_search: %s", results[3])
	}
	s.stop(t)

	// doctor says which provider web_search asks (and whether its key is set).
	cfg := filepath.Join(home, "config.yaml")
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, append(b, []byte("\nweb_search: {provider: brave}\n")...), 0o600)
	out, _, code := crew(t, home, "doctor")
	if code != 0 || !strings.Contains(out, "web_search: brave, but BRAVE_API_KEY is not set") {
		t.Errorf("doctor (%d):\n%s", code, out)
	}
}
