package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
)

// fakeForker answers as the real one does for run "r1" (steps 1 to 3,
// routes with a ":"), recording what it was asked.
type fakeForker struct{ asked []string }

func (f *fakeForker) Fork(_ context.Context, run string, step int, route string) (web.Forked, error) {
	f.asked = append(f.asked, fmt.Sprintf("%s/%d/%s", run, step, route))
	switch {
	case run != "r1":
		return web.Forked{}, fmt.Errorf("run %s: %w", run, loop.ErrForkRun)
	case step > 3:
		return web.Forked{}, fmt.Errorf("run r1 has steps 1 to 3, not %d: %w", step, loop.ErrForkStep)
	case !strings.Contains(route, ":"):
		return web.Forked{}, fmt.Errorf("%w %q", loop.ErrForkRoute, route)
	}
	return web.Forked{Conversation: "fork-1", RunID: "fr1", Route: route, From: events.ForkOrigin{Conversation: "c1", RunID: run, Step: step}}, nil
}

func newForkSite(t *testing.T) (string, *fakeForker) {
	t.Helper()
	h := newHarness(t)
	f := &fakeForker{}
	return h.serve(t, web.Config{Forks: f, Pages: h.pages()}), f
}

// The runs page's fork form follows the form rules (R-X-2 through the
// web): no or a wrong CSRF token, or another origin, is 403 and forks
// nothing; with the token it forks and redirects to the fork's runs.
func TestForkFormNeedsCSRFTokenAndSameOrigin(t *testing.T) {
	site, f := newForkSite(t)
	c := client(t)
	tok := csrfOf(t, c, site)
	post := func(form url.Values, origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, site+"/runs/r1/fork", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	form := url.Values{"from_step": {"2"}, "route": {"openrouter:a/b"}}
	if r := post(form, ""); r.StatusCode != 403 {
		t.Errorf("fork form without token = %d", r.StatusCode)
	}
	form.Set("csrf", wrongToken(tok))
	if r := post(form, ""); r.StatusCode != 403 {
		t.Errorf("fork form with a wrong token = %d", r.StatusCode)
	}
	form.Set("csrf", tok)
	if r := post(form, "http://evil.example"); r.StatusCode != 403 {
		t.Errorf("fork form from another origin = %d", r.StatusCode)
	}
	if len(f.asked) != 0 {
		t.Fatalf("a refused form forked: %v", f.asked)
	}
	if r := post(form, site); r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/c/fork-1/runs" {
		t.Errorf("fork form with token = %d to %q", r.StatusCode, r.Header.Get("Location"))
	}
	form.Set("from_step", "two")
	if r := post(form, site); r.StatusCode != 400 {
		t.Errorf("fork form with a bad step = %d", r.StatusCode)
	}
	// The JSON route takes JSON only (a cross-site form cannot send it).
	resp, _ := c.Post(site+"/api/runs/r1/fork", "application/x-www-form-urlencoded", strings.NewReader("from_step=2&route=a:b"))
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("form-encoded API fork = %d, want 415", resp.StatusCode)
	}
	if len(f.asked) != 1 {
		t.Errorf("forks asked %v, want the one good form", f.asked)
	}
}

// POST /api/runs/{id}/fork maps the fork's errors to statuses and codes.
func TestForkAPIErrors(t *testing.T) {
	site, _ := newForkSite(t)
	for _, tc := range []struct {
		path, body string
		status     int
		code       string
	}{
		{"/api/runs/r1/fork", `{"from_step":2,"route":"openrouter:a/b"}`, 201, ""},
		{"/api/runs/r1/fork", `{"from_step":4,"route":"openrouter:a/b"}`, 400, "bad_step"},
		{"/api/runs/r1/fork", `{"from_step":2,"route":"nonsense"}`, 400, "bad_route"},
		{"/api/runs/r1/fork", `{"from_step":0,"route":"openrouter:a/b"}`, 400, "bad_request"},
		{"/api/runs/r1/fork", `{"route":"openrouter:a/b"}`, 400, "bad_request"},
		{"/api/runs/r1/fork", `{"from_step":2,"route":"a:b","x":1}`, 400, "bad_json"},
		{"/api/runs/nope/fork", `{"from_step":1,"route":"openrouter:a/b"}`, 404, "not_found"},
		{"/api/runs/no.pe/fork", `{"from_step":1,"route":"openrouter:a/b"}`, 400, "invalid_id"},
	} {
		resp, err := http.Post(site+tc.path, "application/json", bytes.NewReader([]byte(tc.body)))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Conversation string `json:"conversation"`
			Error        struct{ Code string }
		}
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != tc.status || out.Error.Code != tc.code || tc.status == 201 && out.Conversation != "fork-1" {
			t.Errorf("POST %s %s = %d %q, want %d %q", tc.path, tc.body, resp.StatusCode, out.Error.Code, tc.status, tc.code)
		}
	}
}
