package web_test

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
)

// R-LOOP-5: GET /api/usage sums the ledger over the owner's days by each
// grouping, unknown costs apart; bad parameters get JSON errors; /usage
// draws the plot on the server.
func TestUsageAPIAndPage(t *testing.T) {
	ctx := t.Context()
	h := newHarness(t)
	log := h.log
	loc := time.FixedZone("owner", -5*3600)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, loc)
	url := h.serve(t, web.Config{
		Pages: &web.Pages{DB: h.db, Location: loc, Clock: func() time.Time { return now }},
		Usage: &web.Usage{DB: h.db, Location: loc, Clock: func() time.Time { return now }},
	})

	usd := func(v float64) *float64 { return &v }
	var last uint64
	add := func(scope events.Scope, at time.Time, evs ...events.Event) {
		t.Helper()
		expect, err := log.Last(ctx, scope.Filter())
		if err != nil {
			t.Fatal(err)
		}
		envs := make([]events.Envelope, len(evs))
		for i, e := range evs {
			envs[i] = events.MustNew(e)
			envs[i].Time = at
		}
		stored, err := log.Append(ctx, scope, expect, envs...)
		if err != nil {
			t.Fatal(err)
		}
		last = stored[len(stored)-1].Seq
	}
	// 2026-11-30 23:30 in the owner's zone is 04:30 UTC on Dec 1: still Nov 30 there.
	lateNov30 := time.Date(2026, 12, 1, 4, 30, 0, 0, time.UTC)
	add(events.Conv("c1"), lateNov30,
		&events.ConversationOpened{Agent: "coach", Channel: "web"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "openrouter:a/b", Model: "a/b", InputTokens: 100, OutputTokens: 10, CostUSD: usd(0.25)},
		&events.ModelCalled{RunID: "r1", Step: 2, Route: "ollama:q", Model: "q", InputTokens: 50, OutputTokens: 5})
	add(events.Conv("c2"), now,
		&events.ConversationOpened{Agent: "chef", Channel: "web"},
		&events.ModelCalled{RunID: "r2", Step: 1, Purpose: events.PurposeEscalation, Route: "openrouter:big", Model: "big", InputTokens: 10, OutputTokens: 1, CostUSD: usd(0.5)},
		&events.ModelCalled{Purpose: events.PurposeSummary, Route: "openrouter:a/b", Model: "a/b", CostUSD: usd(0.125)})
	add(events.Agent("coach"), now, &events.ModelCalled{Purpose: events.PurposeConsolidate, Route: "openrouter:a/b", Model: "a/b", CostUSD: usd(0.0625)})
	if err := h.runner.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}

	type reply struct {
		TotalUSD         float64 `json:"total_usd"`
		UnknownCostCalls int     `json:"unknown_cost_calls"`
		Groups           []struct {
			Key          string  `json:"key"`
			USD          float64 `json:"usd"`
			Calls        int     `json:"calls"`
			InputTokens  int     `json:"input_tokens"`
			OutputTokens int     `json:"output_tokens"`
		} `json:"groups"`
	}
	fetch := func(query string) (int, reply, string) {
		t.Helper()
		resp, err := http.Get(url + "/api/usage" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r reply
		json.Unmarshal(b, &r)
		return resp.StatusCode, r, string(b)
	}
	sums := func(r reply) map[string]float64 {
		m := map[string]float64{}
		for _, g := range r.Groups {
			m[g.Key] = g.USD
		}
		return m
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

	code, r, body := fetch("?from=2026-11-30&to=2026-12-01&group_by=agent")
	if code != 200 || !near(r.TotalUSD, 0.9375) || r.UnknownCostCalls != 1 || len(r.Groups) != 2 ||
		!near(sums(r)["coach"], 0.3125) || !near(sums(r)["chef"], 0.625) {
		t.Errorf("by agent: %d %s", code, body)
	}
	if _, r, body = fetch("?from=2026-11-30&to=2026-12-01&group_by=day"); len(r.Groups) != 2 || r.Groups[0].Key != "2026-11-30" ||
		!near(r.Groups[0].USD, 0.25) || r.Groups[0].Calls != 2 || r.Groups[0].InputTokens != 150 || !near(r.Groups[1].USD, 0.6875) {
		t.Errorf("by day (the owner's): %s", body)
	}
	if _, r, body = fetch("?from=2026-11-30&to=2026-12-01&group_by=purpose"); !near(sums(r)["turn"], 0.25) || !near(sums(r)["escalation"], 0.5) ||
		!near(sums(r)["summary"], 0.125) || !near(sums(r)["consolidate"], 0.0625) {
		t.Errorf("by purpose: %s", body)
	}
	if _, r, body = fetch("?from=2026-11-30&to=2026-12-01&group_by=conversation"); !near(sums(r)["c1"], 0.25) || !near(sums(r)["c2"], 0.625) || !near(sums(r)[""], 0.0625) {
		t.Errorf("by conversation: %s", body)
	}
	if _, r, body = fetch("?from=2026-11-30&to=2026-11-30&group_by=route"); !near(r.TotalUSD, 0.25) || r.UnknownCostCalls != 1 || len(r.Groups) != 2 {
		t.Errorf("one day by route: %s", body)
	}
	if _, r, body = fetch(""); !near(r.TotalUSD, 0.9375) { // the last 30 days, by agent
		t.Errorf("defaults: %s", body)
	}

	for _, q := range []string{"?group_by=model", "?from=30-11-2026", "?to=2026-13-01", "?from=2026-12-02&to=2026-12-01", "?limit=3"} {
		code, _, body := fetch(q)
		var e struct {
			Error struct{ Code, Message string }
		}
		if json.Unmarshal([]byte(body), &e); code != 400 || e.Error.Code != "bad_request" || e.Error.Message == "" {
			t.Errorf("%s: %d %s, want a 400 JSON error", q, code, body)
		}
	}

	resp, err := http.Get(url + "/usage?from=2026-11-30&to=2026-12-01")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	for _, must := range []string{`data-testid="usage-chart"`, `<rect`, `coach, 2026-11-30: $0.2500 (2 calls)`, `data-testid="usage-unknown">1 call<`, `href="/c/c2"`, `$0.9375`} {
		if !strings.Contains(page, must) {
			t.Errorf("usage page lacks %s", must)
		}
	}
	if strings.Contains(page, `src="http`) || strings.Contains(page, `href="http`) {
		t.Errorf("usage page loads something from outside")
	}
}
