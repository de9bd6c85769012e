package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections"
)

type fakeViews struct{}

func (fakeViews) Conversations(context.Context, int) (any, error)   { return []string{}, nil }
func (fakeViews) Conversation(context.Context, string) (any, error) { return nil, web.ErrNotFound }
func (fakeViews) Runs(context.Context, string) (any, error)         { return []string{}, nil }
func (fakeViews) Run(context.Context, string) (projections.Run, error) {
	return projections.Run{}, web.ErrNotFound
}

var _ web.Views = fakeViews{}

var testAuditKey = []byte("audit-key-for-the-web-tests-0123456789")

func newAPI(t *testing.T, token string, ready bool) (*httptest.Server, *events.Log) {
	_, log := eventstest.Start(t)
	h := web.New(web.Config{
		Log:       log,
		Views:     fakeViews{},
		Health:    func(context.Context) (bool, any) { return ready, nil },
		AuthToken: token,
		AuditKey:  testAuditKey,
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, log
}

func do(t *testing.T, req *http.Request) (int, map[string]any, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	raw := new(strings.Builder)
	dec := json.NewDecoder(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		dec.Decode(&body)
	} else {
		b, _ := io.ReadAll(resp.Body)
		raw.Write(b)
	}
	return resp.StatusCode, body, raw.String()
}

func get(t *testing.T, url string) *http.Request {
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	return req
}

func TestHealthzIs503UntilReady(t *testing.T) {
	srv, _ := newAPI(t, "", false)
	if code, body, _ := do(t, get(t, srv.URL+"/healthz")); code != 503 || body["status"] != "starting" {
		t.Errorf("healthz = %d %v, want 503 starting", code, body)
	}
}

func TestAuthTokenIsRequiredExceptHealthz(t *testing.T) {
	srv, _ := newAPI(t, "s3cret", true)
	if code, _, _ := do(t, get(t, srv.URL+"/healthz")); code != 200 {
		t.Errorf("healthz without token = %d, want 200", code)
	}
	code, body, _ := do(t, get(t, srv.URL+"/api/conversations"))
	if code != 401 || body["error"].(map[string]any)["code"] != "unauthorized" {
		t.Errorf("no token: %d %v", code, body)
	}
	req := get(t, srv.URL+"/api/conversations")
	req.Header.Set("Authorization", "Bearer wrong")
	if code, _, _ := do(t, req); code != 401 {
		t.Errorf("wrong token = %d", code)
	}
	req = get(t, srv.URL+"/api/conversations")
	req.Header.Set("Authorization", "Bearer s3cret")
	if code, _, _ := do(t, req); code != 200 {
		t.Errorf("right token = %d", code)
	}
}

func TestBadInputGetsJSONErrors(t *testing.T) {
	srv, _ := newAPI(t, "", true)
	for _, c := range []struct {
		path string
		code int
		err  string
	}{
		{"/api/conversations/a.b", 400, "invalid_id"},
		{"/api/conversations/%2e%2e%2fetc", 400, "invalid_id"},
		{"/api/conversations/nope", 404, "not_found"},
		{"/api/conversations/nope/export", 404, "not_found"},
		{"/api/runs/nope", 404, "not_found"},
		{"/api/nothing", 404, "not_found"},
	} {
		code, body, _ := do(t, get(t, srv.URL+c.path))
		errObj, _ := body["error"].(map[string]any)
		if code != c.code || errObj["code"] != c.err {
			t.Errorf("GET %s = %d %v, want %d %s", c.path, code, body, c.code, c.err)
		}
	}
}

func TestExportEndpointVerifies(t *testing.T) {
	srv, log := newAPI(t, "", true)
	if _, err := log.Append(t.Context(), events.Conv("c1"), 0,
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "hi"})); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/api/conversations/c1/export")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	v, err := events.VerifyExport(resp.Body, testAuditKey)
	if err != nil || v.Conversation != "c1" || v.Events != 1 || !v.Proven {
		t.Errorf("verify = %+v %v, want 1 event of c1 proven by the audit key (item 9: the download is keyed)", v, err)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, `c1.jsonl`) {
		t.Errorf("Content-Disposition = %q", cd)
	}
}
