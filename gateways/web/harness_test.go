package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/projectionstest"
	"go.etcd.io/bbolt"
)

// harness is the page and view tests' set-up: a real embedded log with
// every projection running on it (projectionstest.Start), and the
// gateway served over them (serve).
type harness struct {
	log    *events.Log
	db     *bbolt.DB
	runner *projections.Runner
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	log, db, runner := projectionstest.Start(t)
	return &harness{log: log, db: db, runner: runner}
}

// pages are the pages on h's read models, in UTC on the wall clock.
func (h *harness) pages() *web.Pages {
	return &web.Pages{DB: h.db, Location: time.UTC, Clock: time.Now}
}

// serve serves the gateway on cfg, closed at cleanup, and returns its
// URL; the log, the views and a healthy health check are h's where cfg
// leaves them.
func (h *harness) serve(t testing.TB, cfg web.Config) string {
	t.Helper()
	if cfg.Log == nil {
		cfg.Log = h.log
	}
	if cfg.Views == nil {
		cfg.Views = fakeViews{}
	}
	if cfg.Health == nil {
		cfg.Health = func(context.Context) (bool, any) { return true, nil }
	}
	srv := httptest.NewServer(web.New(cfg))
	t.Cleanup(srv.Close)
	return srv.URL
}

// add stores evs in conversation conv and waits until they are
// projected; it returns the last one's sequence.
func (h *harness) add(t *testing.T, conv string, evs ...events.Event) uint64 {
	t.Helper()
	stored := projectionstest.Append(t, h.log, h.runner, events.Conv(conv), evs...)
	return stored[len(stored)-1].Seq
}

// getBody is the body of GET url, which must answer 200.
func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d\n%s", url, resp.StatusCode, b)
	}
	return string(b)
}
