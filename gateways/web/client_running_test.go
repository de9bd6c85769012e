package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Running, HeldBy and RunningMCP are doctor's asks of the running
// server: its line, its line as the store's holder with its /healthz, and
// the MCP states when one answers at the URL; nothing when the URL is
// empty (no serve.json) or none answers.
func TestRunningNamesOnlyAServerThatAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.Write([]byte(`{"status":"ok"}`))
		case "/api/mcp":
			w.Write([]byte(`{"servers":[{"name":"files"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	ctx := context.Background()
	c := Client{URL: srv.URL}
	if got, want := c.Running(ctx, 42, ""), "server: crew serve (pid 42) listens on ?: "+srv.URL; len(got) != 1 || got[0] != want {
		t.Errorf("Running = %q, want %q", got, want)
	}
	if got, want := c.HeldBy(ctx, 42), "  held by crew serve (pid 42) at "+srv.URL; len(got) != 2 || got[0] != want || got[1] != "  /healthz: ok" {
		t.Errorf("HeldBy = %q, want %q and its /healthz", got, want)
	}
	if states, ok := c.RunningMCP(ctx); !ok || len(states) != 1 || states[0].Name != "files" {
		t.Errorf("RunningMCP = %+v, %v; want the one server files", states, ok)
	}
	srv.Close()
	if got := c.Running(ctx, 42, "127.0.0.1:1"); got != nil {
		t.Errorf("Running of a closed server = %q, want none", got)
	}
	if _, ok := c.RunningMCP(ctx); ok {
		t.Error("RunningMCP of a closed server says one runs")
	}
	if got := (Client{}).Running(ctx, 1, "x"); got != nil {
		t.Errorf("Running with no URL = %q", got)
	}
	if _, ok := (Client{}).RunningMCP(ctx); ok {
		t.Error("RunningMCP with no URL says one runs")
	}
}
