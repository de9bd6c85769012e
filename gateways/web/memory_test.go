package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop/consolidate"
	"github.com/my-agent-crew/crew/ui"
	"go.etcd.io/bbolt"
)

// fakeMemory keeps proposals in memory with the service's rules, so the
// tests see the gateway's mapping of each outcome.
type fakeMemory struct {
	mu        sync.Mutex
	status    map[string]string // id → pending, applied, rejected, rolled_back
	changed   bool              // MEMORY.md edited since the proposals
	decisions []string          // "<id> <approve> <channel>"
}

var _ web.MemoryService = (*fakeMemory)(nil)

func newFakeMemory() *fakeMemory {
	return &fakeMemory{status: map[string]string{"p1": "pending", "p2": "applied"}}
}

func (f *fakeMemory) view(id string) map[string]any {
	return map[string]any{"id": id, "agent": "pong", "status": f.status[id]}
}

func (f *fakeMemory) Proposals(ctx context.Context, agent string) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return []any{f.view("p2"), f.view("p1")}, nil
}

func (f *fakeMemory) Proposal(ctx context.Context, id string) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.status[id]; !ok {
		return nil, fmt.Errorf("no proposal %q: %w", id, consolidate.ErrUnknownProposal)
	}
	return f.view(id), nil
}

func (f *fakeMemory) Consolidate(ctx context.Context, agent, trigger string) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch agent {
	case "quiet":
		return nil, fmt.Errorf("%w: quiet wrote no notes in memory/ from 2026-11-24 to 2026-11-30", consolidate.ErrNothingToConsolidate)
	case "broken":
		return nil, fmt.Errorf("%w: fake:echo: down", consolidate.ErrModel)
	case "nobody":
		return nil, fmt.Errorf("%w: %q is not a loaded agent", consolidate.ErrUnknownAgent, agent)
	}
	id := fmt.Sprint("p", len(f.status)+1)
	f.status[id] = "pending"
	return map[string]any{"id": id, "agent": agent, "trigger": trigger, "status": "pending"}, nil
}

func (f *fakeMemory) Decide(ctx context.Context, id string, approve bool, channel string) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.status[id]
	switch {
	case !ok:
		return nil, fmt.Errorf("no proposal %q: %w", id, consolidate.ErrUnknownProposal)
	case st != "pending":
		return nil, fmt.Errorf("%w: proposal %s of pong was approved", consolidate.ErrAlreadyDecided, id)
	case approve && f.changed:
		return nil, fmt.Errorf("%w since proposal %s was made: approving it would lose that change", consolidate.ErrMemoryChanged, id)
	}
	f.decisions = append(f.decisions, fmt.Sprint(id, " ", approve, " ", channel))
	f.status[id] = map[bool]string{true: "applied", false: "rejected"}[approve]
	return f.view(id), nil
}

func (f *fakeMemory) Rollback(ctx context.Context, id, channel string) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status[id] != "applied" {
		return nil, fmt.Errorf("%w: proposal %s is %s", consolidate.ErrNotApplied, id, f.status[id])
	}
	f.status[id] = "rolled_back"
	return f.view(id), nil
}

func (f *fakeMemory) Rows(ctx context.Context, agent string) ([]ui.ProposalRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var rows []ui.ProposalRow
	for _, id := range []string{"p2", "p1"} {
		rows = append(rows, ui.ProposalRow{ID: id, Agent: "pong", Kind: "add_only", Status: f.status[id], When: "Nov 30 18:00",
			Diff: []ui.DiffLine{{Op: " ", Text: "# Memory"}, {Op: "-", Text: "- Old fact."}, {Op: "+", Text: "- Prefers <oat> milk."}}})
	}
	return rows, nil
}

func newMemorySite(t *testing.T) (*httptest.Server, *fakeMemory) {
	t.Helper()
	_, log := eventstest.Start(t)
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "p.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mem := newFakeMemory()
	srv := httptest.NewServer(web.New(web.Config{
		Log: log, Views: fakeViews{}, Health: func(context.Context) (bool, any) { return true, nil },
		Memory: mem,
		Pages: &web.Pages{DB: db, Location: time.UTC, Clock: time.Now,
			Agents: []ui.AgentRow{{ID: "pong", Name: "Pong"}}},
	}))
	t.Cleanup(srv.Close)
	return srv, mem
}

func postMemory(t *testing.T, url, contentType, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	status, out, _ := do(t, req)
	return status, out
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func TestMemoryProposalAPI(t *testing.T) {
	srv, mem := newMemorySite(t)
	base := srv.URL + "/api/memory"
	const jsonType = "application/json"

	tests := []struct {
		name       string
		method     string
		path, body string
		ctype      string
		status     int
		code       string
	}{
		{"list", "GET", "/proposals", "", "", 200, ""},
		{"list of an agent", "GET", "/proposals?agent=pong", "", "", 200, ""},
		{"list with a bad agent", "GET", "/proposals?agent=a.b", "", "", 400, "invalid_id"},
		{"get", "GET", "/proposals/p1", "", "", 200, ""},
		{"get unknown", "GET", "/proposals/nosuch", "", "", 404, "not_found"},
		{"get bad id", "GET", "/proposals/a.b", "", "", 400, "invalid_id"},
		{"decide without JSON", "POST", "/proposals/p1", `decision=approve`, "application/x-www-form-urlencoded", 415, "bad_content_type"},
		{"decide with a bad decision", "POST", "/proposals/p1", `{"decision":"maybe"}`, jsonType, 400, "bad_request"},
		{"decide with an unknown field", "POST", "/proposals/p1", `{"decision":"approve","always":true}`, jsonType, 400, "bad_json"},
		{"approve", "POST", "/proposals/p1", `{"decision":"approve"}`, jsonType, 200, ""},
		{"approve again", "POST", "/proposals/p1", `{"decision":"reject"}`, jsonType, 409, "already_decided"},
		{"decide unknown", "POST", "/proposals/nosuch", `{"decision":"reject"}`, jsonType, 404, "not_found"},
		{"roll back", "POST", "/proposals/p2/rollback", "", jsonType, 200, ""},
		{"roll back again", "POST", "/proposals/p2/rollback", "", jsonType, 409, "not_applied"},
		{"consolidate", "POST", "/consolidate", `{"agent":"pong"}`, jsonType, 201, ""},
		{"consolidate without notes", "POST", "/consolidate", `{"agent":"quiet"}`, jsonType, 422, "nothing_to_consolidate"},
		{"consolidate with every route down", "POST", "/consolidate", `{"agent":"broken"}`, jsonType, 502, "model_failed"},
		{"consolidate an unknown agent", "POST", "/consolidate", `{"agent":"nobody"}`, jsonType, 404, "not_found"},
		{"consolidate without an agent", "POST", "/consolidate", `{}`, jsonType, 400, "bad_request"},
		{"consolidate for the CLI", "POST", "/consolidate", `{"agent":"pong","trigger":"cli"}`, jsonType, 201, ""},
		{"consolidate as a job", "POST", "/consolidate", `{"agent":"pong","trigger":"job"}`, jsonType, 400, "bad_request"},
	}
	for _, tt := range tests {
		var status int
		var body map[string]any
		if tt.method == "GET" {
			status, body, _ = do(t, get(t, base+tt.path))
		} else {
			status, body = postMemory(t, base+tt.path, tt.ctype, tt.body)
		}
		if status != tt.status || errCode(body) != tt.code {
			t.Errorf("%s: %d %s (%v), want %d %s", tt.name, status, errCode(body), body, tt.status, tt.code)
		}
	}
	// A refusal says why, in words.
	mem.mu.Lock()
	mem.changed = true
	mem.mu.Unlock()
	_, body := postMemory(t, base+"/consolidate", jsonType, `{"agent":"pong"}`)
	id, _ := body["id"].(string)
	status, body := postMemory(t, base+"/proposals/"+id, jsonType, `{"decision":"approve"}`)
	if msg := fmt.Sprint(body["error"]); status != 409 || errCode(body) != "memory_changed" || !strings.Contains(msg, "approving it would lose that change") {
		t.Errorf("approve after an edit: %d %v", status, body)
	}
	if got := strings.Join(mem.decisions, "; "); got != "p1 true api" {
		t.Errorf("decisions = %q", got)
	}
}

func TestMemoryPageAndForms(t *testing.T) {
	srv, mem := newMemorySite(t)
	c := client(t)
	resp, err := c.Get(srv.URL + "/memory")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("GET /memory = %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	html := string(page)
	for _, want := range []string{
		`data-proposal-id="p1"`, `data-testid="proposal-approve"`, `data-testid="proposal-reject"`, `data-testid="proposal-rollback"`,
		`class="diff-line diff-add"`, `class="diff-line diff-del"`, `- Prefers &lt;oat&gt; milk.`, `action="/memory/p1/decide"`,
		`action="/memory/p2/rollback"`, `data-testid="memory-link"`, `name="csrf"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(html, "<script>") || strings.Contains(html, "style=") || strings.Contains(html, "onclick") {
		t.Errorf("page has inline script or style")
	}
	u, _ := url.Parse(srv.URL)
	var csrf string
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "crew_csrf" {
			csrf = ck.Value
		}
	}

	form := func(path string, v url.Values) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, bytes.NewBufferString(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// Without the CSRF token: refused, nothing decided.
	if resp := form("/memory/p1/decide", url.Values{"decision": {"approve"}}); resp.StatusCode != 403 {
		t.Errorf("form without csrf = %d, want 403", resp.StatusCode)
	}
	resp = form("/memory/p1/decide", url.Values{"decision": {"approve"}, "csrf": {csrf}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/memory#p-p1" {
		t.Errorf("approve form = %d → %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := strings.Join(mem.decisions, "; "); got != "p1 true web" {
		t.Errorf("decisions = %q, want the web approval", got)
	}
	// A refused decision shows the page again with the reason.
	resp = form("/memory/p1/decide", url.Values{"decision": {"reject"}, "csrf": {csrf}})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 409 || !strings.Contains(string(body), `data-testid="memory-error"`) || !strings.Contains(string(body), "was approved") {
		t.Errorf("second decision form = %d:\n%s", resp.StatusCode, body)
	}
	if resp := form("/memory/p2/rollback", url.Values{"csrf": {csrf}}); resp.StatusCode != 303 {
		t.Errorf("rollback form = %d", resp.StatusCode)
	}
	resp = form("/memory/consolidate", url.Values{"agent": {"pong"}, "csrf": {csrf}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/memory?agent=pong" {
		t.Errorf("consolidate form = %d → %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
