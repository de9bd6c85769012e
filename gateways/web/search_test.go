package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections/projectionstest"
	"github.com/my-agent-crew/crew/projections/search"
)

// The owner's search: GET /api/search answers hits with their source and
// link, bad parameters get JSON errors; /search groups hits by kind with
// the matched words marked and escaped; the link opens the conversation
// with the message highlighted.
func TestSearchAPIAndPage(t *testing.T) {
	ctx := t.Context()
	_, log := eventstest.Start(t)
	envs := []events.Envelope{
		events.MustNew(&events.ConversationOpened{Agent: "main", Channel: "web", Day: "2026-10-14"}),
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "what about the flat's heating <script>alert(1)</script>?"}),
		events.MustNew(&events.RunStarted{RunID: "r1", Agent: "main", Trigger: "message"}),
		events.MustNew(&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake", Model: "fake", Text: "Call the landlord about the heating on Monday."}),
		events.MustNew(&events.RunFinished{RunID: "r1", Status: events.RunDone}),
	}
	if _, err := log.Append(ctx, events.Conv("web-20261014"), 0, envs...); err != nil {
		t.Fatal(err)
	}
	last, _ := log.Last(ctx, events.Root+".>")
	db, runner := projectionstest.Open(t, log) // catching up on what is there
	if err := runner.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	x, err := search.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := search.Start(x, log, log.Redactor(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(); x.Close() })
	if err := f.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(web.Config{
		Log: log, Views: fakeViews{}, Health: func(context.Context) (bool, any) { return true, nil },
		Pages:  &web.Pages{DB: db, Location: time.UTC, Clock: time.Now},
		Search: x,
	}))
	t.Cleanup(srv.Close)
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

	code, body := get("/api/search?q=heating")
	var ans struct {
		Mode string `json:"mode"`
		Hits []struct {
			Kind, Source, Link, Conversation, Subject string
			Seq                                       uint64
		} `json:"hits"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &ans) != nil || len(ans.Hits) != 2 {
		t.Fatalf("GET /api/search: %d %s", code, body)
	}
	var msgLink string
	for _, h := range ans.Hits {
		if h.Conversation != "web-20261014" || h.Seq == 0 || !strings.HasPrefix(h.Subject, "crew.conv.web-20261014.") || !strings.Contains(h.Source, "2026-10-14") {
			t.Errorf("hit %+v", h)
		}
		if h.Kind == search.KindMessage {
			msgLink = h.Link
		}
	}
	if code, body := get("/api/search?q=heating&kind=memory"); code != 200 || !strings.Contains(body, `"hits": []`) {
		t.Errorf("kind=memory: %d %s", code, body)
	}
	for _, bad := range []string{"/api/search", "/api/search?q=x&kind=nope", "/api/search?q=x&since=yesterday"} {
		if code, body := get(bad); code != 400 || !strings.Contains(body, `"bad_query"`) {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}

	code, page := get("/search?q=heating+script")
	if code != 200 || strings.Count(page, `data-testid="search-group"`) != 2 || !strings.Contains(page, "<mark>heating</mark>") {
		t.Fatalf("/search: %d %s", code, page)
	}
	if strings.Contains(page, "<script>alert") || !strings.Contains(page, "&lt;") {
		t.Errorf("a snippet's markup was not escaped")
	}
	if !strings.Contains(page, `data-testid="search-box"`) {
		t.Errorf("no search box in the sidebar")
	}
	code, conv := get(msgLink)
	if code != 200 || strings.Count(conv, `data-hit="true"`) != 1 || !strings.Contains(conv, `id="hit"`) {
		t.Errorf("%s: %d, hit marked %d times", msgLink, code, strings.Count(conv, `data-hit="true"`))
	}
}
