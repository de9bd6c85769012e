package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// forkAPI is an OpenAI-compatible server recording every request's
// messages by model. vendor/orig lists the workspace twice, then answers;
// any other model answers at once with its name.
type forkAPI struct {
	mu   sync.Mutex
	seen map[string][]json.RawMessage // model → each request's messages
}

func (a *forkAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string          `json:"model"`
		Messages json.RawMessage `json:"messages"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	var msgs []map[string]any
	json.Unmarshal(req.Messages, &msgs)
	a.mu.Lock()
	a.seen[req.Model] = append(a.seen[req.Model], req.Messages)
	a.mu.Unlock()
	tools := 0
	for _, m := range msgs {
		if m["role"] == "tool" {
			tools++
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if req.Model == "vendor/orig" && tools < 2 {
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":"workspace_list","arguments":"{\"path\":\".\"}"}}]},"finish_reason":"tool_calls"}]}`+"\n\n", tools)
	} else {
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":"answered by %s"},"finish_reason":"stop"}]}`+"\n\n", req.Model)
	}
	fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"cost":0.0001}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// requests returns the messages model was sent, each decoded.
func (a *forkAPI) requests(model string) []any {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []any
	for _, raw := range a.seen[model] {
		var v any
		json.Unmarshal(raw, &v)
		out = append(out, v)
	}
	return out
}

var forkedLine = regexp.MustCompile(`forked run \S+ of \S+ at step (\d+) onto (\S+): conversation (\S+), run (\S+)`)

// R-X-2, R-OBS-3 end to end: a run of three steps on vendor/orig is forked
// at step 2 onto vendor/fork — through the running server (crew replay
// --from-step before the run id, and POST /api/runs/{id}/fork), then on the
// stopped home (flags after the run id). Each fork's first request holds
// exactly the messages the original's step 2 sent; the fork answers on its
// route; the original's log is byte-identical; the runs view links both
// ways and offers the fork form; bad input is refused saying what.
func TestForkRunThroughServerAndStoppedHome(t *testing.T) {
	api := &forkAPI{seen: map[string][]json.RawMessage{}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	// The server and the stopped-home command see the same crew.
	t.Setenv("OPENROUTER_API_KEY", "test-key")
	t.Setenv("OPENROUTER_BASE_URL", srv.URL+"/v1")
	t.Setenv("MY_AGENT_ROUTES", "openrouter:vendor/orig")
	home := initHome(t)
	s := startServe(t, home)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "list my workspace twice"})
	id := acc["conversation_id"].(string)
	waitConv(t, s.url, id, "idle", settled)
	run := finishedRuns(t, s.url, id, 1)[0].RunID
	orig := api.requests("vendor/orig")
	if len(orig) != 3 {
		t.Fatalf("vendor/orig got %d requests, want 3 (steps 1-3)", len(orig))
	}
	step2 := orig[1]
	export := func() string {
		t.Helper()
		out, errOut, code := crew(t, home, "export", id)
		if code != 0 {
			t.Fatalf("export: %d %s", code, errOut)
		}
		return out
	}
	before := export()

	checkFork := func(how, conv string, n int) {
		t.Helper()
		c := waitConv(t, s.url, conv, "fork idle", settled)
		if last := c.History[len(c.History)-1].Text; last != "answered by vendor/fork" {
			fx, _, _ := crew(t, home, "export", conv)
			t.Errorf("%s: fork's last reply %q\n%s", how, last, fx)
		}
		got := api.requests("vendor/fork")
		if len(got) != n {
			t.Fatalf("%s: vendor/fork got %d requests, want %d", how, len(got), n)
		}
		if !reflect.DeepEqual(got[n-1], step2) {
			a, _ := json.Marshal(got[n-1])
			b, _ := json.Marshal(step2)
			t.Errorf("%s: the fork's first request differs from step 2's:\n got %s\nwant %s", how, a, b)
		}
	}

	// Through the running server, flags before the run id.
	out, errOut, code := crew(t, home, "replay", "--from-step", "2", "--route", "openrouter:vendor/fork", run)
	m := forkedLine.FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] != "2" || m[2] != "openrouter:vendor/fork" {
		t.Fatalf("fork through the server: code %d\n%s%s", code, out, errOut)
	}
	fork1, forkRun1 := m[3], m[4]
	checkFork("cli via server", fork1, 1)

	// The API route itself.
	status, body := postJSON(t, s.url+"/api/runs/"+run+"/fork", map[string]any{"from_step": 2, "route": "openrouter:vendor/fork"})
	if status != http.StatusCreated || body["conversation"] == nil || body["route"] != "openrouter:vendor/fork" {
		t.Fatalf("POST fork = %d %v", status, body)
	}
	checkFork("api", body["conversation"].(string), 2)

	// Bad input: what is wrong, and nothing made.
	for _, tc := range []struct {
		path string
		body map[string]any
		code int
		want string
	}{
		{"/api/runs/" + run + "/fork", map[string]any{"from_step": 4, "route": "openrouter:vendor/fork"}, 400, "steps 1 to 3"},
		{"/api/runs/" + run + "/fork", map[string]any{"from_step": 0, "route": "openrouter:vendor/fork"}, 400, "from_step"},
		{"/api/runs/" + run + "/fork", map[string]any{"from_step": 2, "route": "nonsense"}, 400, "route"},
		{"/api/runs/" + run + "/fork", map[string]any{"from_step": 2, "route": "fake:nosuch"}, 400, "route"},
		{"/api/runs/" + run + "/fork", map[string]any{"from_step": 2}, 400, "route"},
		{"/api/runs/" + run + "/fork", map[string]any{"from_step": 2, "route": "openrouter:x", "extra": 1}, 400, "unknown field"},
		{"/api/runs/nosuchrun/fork", map[string]any{"from_step": 1, "route": "openrouter:vendor/fork"}, 404, "nosuchrun"},
	} {
		status, body := postJSON(t, s.url+tc.path, tc.body)
		msg, _ := json.Marshal(body)
		if status != tc.code || !strings.Contains(string(msg), tc.want) {
			t.Errorf("POST %s %v = %d %s, want %d naming %q", tc.path, tc.body, status, msg, tc.code, tc.want)
		}
	}
	if n := len(api.requests("vendor/fork")); n != 2 {
		t.Errorf("a refused fork called the model (%d requests)", n)
	}

	// The runs view links origin and fork both ways, and offers the form.
	var origin, forked struct {
		Forks      []struct{ RunID, Conversation string } `json:"forks"`
		ForkedFrom *struct {
			RunID string `json:"run_id"`
			Step  int    `json:"step"`
		} `json:"forked_from"`
	}
	getJSON(t, s.url+"/api/runs/"+run, &origin)
	getJSON(t, s.url+"/api/runs/"+forkRun1, &forked)
	if len(origin.Forks) != 2 || forked.ForkedFrom == nil || forked.ForkedFrom.RunID != run || forked.ForkedFrom.Step != 2 {
		t.Errorf("links: origin forks %+v, fork's origin %+v", origin.Forks, forked.ForkedFrom)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page := func(path string) string {
		t.Helper()
		resp, err := c.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	runsPage := page("/c/" + id + "/runs")
	for _, want := range []string{`data-testid="fork-link"`, `href="/c/` + fork1 + `/runs#run-` + forkRun1 + `"`, `action="/runs/` + run + `/fork"`,
		`name="from_step" value="2"`, `<option value="openrouter:vendor/orig">`} {
		if !strings.Contains(runsPage, want) {
			t.Errorf("origin's runs page lacks %s", want)
		}
	}
	if fp := page("/c/" + fork1 + "/runs"); !strings.Contains(fp, `href="/c/`+id+`/runs#run-`+run+`"`) {
		t.Errorf("fork's runs page does not link its origin")
	}
	if chat := page("/c/" + fork1); !strings.Contains(chat, "list my workspace twice") || !strings.Contains(chat, "answered by vendor/fork") {
		t.Errorf("fork's chat does not show the copied history and its answer")
	}
	u, _ := url.Parse(s.url)
	csrf := ""
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "crew_csrf" {
			csrf = ck.Value
		}
	}
	form := url.Values{"from_step": {"2"}, "route": {"openrouter:vendor/fork"}}
	resp, err := c.PostForm(s.url+"/runs/"+run+"/fork", form)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("fork form without CSRF = %v %v, want 403", resp.StatusCode, err)
	}
	form.Set("csrf", csrf)
	resp, err = c.PostForm(s.url+"/runs/"+run+"/fork", form)
	if err != nil || resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/c/fork-") {
		t.Fatalf("fork form = %v %v", resp, err)
	}
	checkFork("form", strings.TrimSuffix(strings.TrimPrefix(resp.Header.Get("Location"), "/c/"), "/runs"), 3)
	s.stop(t)

	// On the stopped home, flags after the run id: this process opens the
	// log, runs the fork and says how it ended.
	out, errOut, code = crew(t, home, "replay", run, "--from-step", "2", "--route", "openrouter:vendor/fork")
	m = forkedLine.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "done") || !strings.Contains(out, "answered by vendor/fork") {
		t.Fatalf("fork on the stopped home: code %d\n%s%s", code, out, errOut)
	}
	if got := api.requests("vendor/fork"); len(got) != 4 || !reflect.DeepEqual(got[3], step2) {
		t.Errorf("stopped-home fork: %d requests; last equals step 2: %v", len(got), len(got) == 4 && reflect.DeepEqual(got[3], step2))
	}
	// The fork's run replays like any other.
	if out, errOut, code := crew(t, home, "replay", m[4]); code != 0 || !strings.Contains(out, "events identical") {
		t.Errorf("replay of the fork's run: code %d\n%s%s", code, out, errOut)
	}
	fout, _, _ := crew(t, home, "export", m[3])
	if !strings.Contains(fout, `"type":"conversation_forked"`) || !strings.Contains(fout, `"route":"openrouter:vendor/fork"`) {
		t.Errorf("the fork's export lacks its fork events")
	}
	// Bad input on the CLI: what and where, exit non-zero.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", run, "--from-step", "9", "--route", "openrouter:vendor/fork"}, "steps 1 to 3, not 9"},
		{[]string{"replay", run, "--from-step", "0", "--route", "openrouter:vendor/fork"}, "a step is 1 or more"},
		{[]string{"replay", run, "--from-step", "x", "--route", "openrouter:vendor/fork"}, "invalid value"},
		{[]string{"replay", run, "--from-step", "2"}, "needs --route"},
		{[]string{"replay", run, "--from-step", "2", "--route", "bogus"}, "route"},
		{[]string{"replay", "nosuchrun", "--from-step", "1", "--route", "openrouter:vendor/fork"}, "nosuchrun"},
	} {
		out, errOut, code := crew(t, home, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("crew %v: code %d, stderr %q, want it to name %q (stdout %q)", tc.args, code, errOut, tc.want, out)
		}
	}
	if n := len(api.requests("vendor/fork")); n != 4 {
		t.Errorf("a refused fork called the model (%d requests)", n)
	}
	if after := export(); after != before {
		t.Errorf("the original's export changed after four forks")
	}
}
