package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections/projectionstest"
)

// Config.On builds every view on the store it is given: the API's view of
// a conversation just stored, the pages with the running crew's banner,
// usage with today's budget; a part the crew lacks (memory, canvas, a
// door) leaves its routes out, and the base's own settings stay.
func TestOnBuildsTheViewsOnTheStore(t *testing.T) {
	ctx := t.Context()
	log, db, runner := projectionstest.Start(t)
	if _, err := log.Append(ctx, events.Conv("c1"), events.Any,
		events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}),
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "hello from the store"})); err != nil {
		t.Fatal(err)
	}
	base := web.Config{AuditKey: []byte("key")}
	cfg := base.On(web.Store{Log: log, DB: db, Fresh: runner, Convs: loop.NewConvs(log, nil), Home: t.TempDir(), Location: time.UTC},
		web.Running{Banner: "Running on a test banner", Budget: func() any { return map[string]any{"spent_usd": 0.25} }})
	if cfg.Memory != nil || cfg.Canvas != nil || string(cfg.AuditKey) != "key" || cfg.Log != log {
		t.Fatalf("On: memory %v, canvas %v, audit key %q, log %p; want no memory, no canvas, the base's key, the store's log",
			cfg.Memory, cfg.Canvas, cfg.AuditKey, cfg.Log)
	}
	srv := httptest.NewServer(web.New(cfg))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/api/conversations/c1"); code != 200 || !strings.Contains(body, "hello from the store") {
		t.Errorf("GET /api/conversations/c1: %d %s", code, body)
	}
	if code, body := get("/c/c1"); code != 200 || !strings.Contains(body, "Running on a test banner") || !strings.Contains(body, "hello from the store") {
		t.Errorf("GET /c/c1: %d, want the banner and the message:\n%s", code, body)
	}
	if code, body := get("/api/budget"); code != 200 || !strings.Contains(body, "0.25") {
		t.Errorf("GET /api/budget: %d %s", code, body)
	}
	if code, _ := get("/api/memory/proposals"); code != 404 {
		t.Errorf("GET /api/memory/proposals without a memory service: %d, want 404", code)
	}
	// The doors that are there, and no nil one dressed as a door.
	if cfg.Inbound != nil || cfg.Approvals != nil || cfg.Questions != nil || cfg.Stops != nil || cfg.Tasks != nil {
		t.Errorf("On without doors: inbound %v, approvals %v, questions %v, stops %v, tasks %v; want none",
			cfg.Inbound, cfg.Approvals, cfg.Questions, cfg.Stops, cfg.Tasks)
	}
	stops := &inbound.Stops{}
	cfg = base.On(web.Store{Log: log, DB: db, Convs: loop.NewConvs(log, nil)}, web.Running{Doors: inbound.Doors{Stops: stops}})
	if cfg.Stops != stops || cfg.Tasks != stops || cfg.Inbound != nil || cfg.Approvals != nil {
		t.Errorf("On with the stops door only: stops %v, tasks %v, inbound %v, approvals %v", cfg.Stops, cfg.Tasks, cfg.Inbound, cfg.Approvals)
	}
}
