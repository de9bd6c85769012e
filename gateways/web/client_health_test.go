package web_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections"
)

// doctor's lines of a running server's /healthz: its status, each
// projection (a stopped one says why) and the worker's counters; a
// server that does not answer is one line, and Answers says so.
func TestClientHealthLines(t *testing.T) {
	_, log := eventstest.Start(t)
	srv := httptest.NewServer(web.New(web.Config{Log: log, Views: fakeViews{}, AuditKey: testAuditKey,
		Health: func(context.Context) (bool, any) {
			return true, map[string]any{
				"projections": []projections.Status{{Name: "runs", Checkpoint: 7, Lag: 2}, {Name: "jobs", Checkpoint: 3, Lag: 6, Error: "beyond the stream"}},
				"turns":       view.WorkerStats{InFlight: 1, Limit: 4, Queued: 2, FailedPasses: 1},
				"cluster":     view.ClusterStats{AdoptFailures: 2, LastAdoptError: "database not open"},
			}
		}}))
	c := web.Client{URL: srv.URL}
	want := []string{
		"  /healthz: ready",
		"  projection runs: at 7, lag 2",
		"  projection jobs: at 3, lag 6, stopped: beyond the stream",
		"  turns: 1 in flight (turns_in_flight 4), 2 queued, 0 waiting to retry, 1 failed passes since start (each is in the server's log at warn: \"turn pass failed\")",
		"  cluster: 2 failed looks for conversations to adopt since start (each is in the server's log at warn; the last: database not open)",
	}
	if got := c.HealthLines(t.Context()); !slices.Equal(got, want) {
		t.Errorf("HealthLines =\n%q\nwant\n%q", got, want)
	}
	if !c.Answers(t.Context()) {
		t.Error("Answers = false for a running server")
	}
	srv.Close()
	if got := c.HealthLines(t.Context()); len(got) != 1 || !strings.HasPrefix(got[0], "  /healthz: ") || strings.Contains(got[0], "ready") {
		t.Errorf("HealthLines of a stopped server = %q, want one line saying why", got)
	}
	if c.Answers(t.Context()) {
		t.Error("Answers = true for a stopped server")
	}
}
