package web

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/ui"
	"go.etcd.io/bbolt"
)

// Usage serves the usage ledger (R-LOOP-5): GET /api/usage and /usage,
// read from the usage projection, days cut in the owner's zone.
type Usage struct {
	DB       *bbolt.DB // the projections database
	Location *time.Location
	Clock    func() time.Time // nil: time.Now
	// Log and Fresh, when set, make a read see every call stored before
	// it: the ledger waits, briefly, for the projection to apply the
	// log's last sequence.
	Log   *events.Log
	Fresh projections.Freshness
	// Budget, when set, serves GET /api/budget: today's spend against
	// the budgets (budget.Ledger.Today).
	Budget func() any
}

// caughtUp waits up to two seconds for the ledger to reach the log's end;
// past that the page shows what it has.
func (u *Usage) caughtUp(ctx context.Context) {
	caughtUpOn(ctx, u.Log, u.Fresh, events.Root+".>")
}

// defaultUsageDays is the window when from is not given: the last 30 days.
const defaultUsageDays = 30

// usageWindow is a validated from/to pair: the owner's days, inclusive.
type usageWindow struct {
	from, to   string
	start, end time.Time // [start, end) as instants
}

// window reads from and to (YYYY-MM-DD, the owner's days, inclusive);
// missing to is today, missing from 29 days before to.
func (u *Usage) window(q map[string][]string) (usageWindow, error) {
	now := time.Now
	if u.Clock != nil {
		now = u.Clock
	}
	loc := u.Location
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	parse := func(k string) (time.Time, bool, error) {
		v := get(k)
		if v == "" {
			return time.Time{}, false, nil
		}
		d, err := time.ParseInLocation(time.DateOnly, v, loc)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("%s=%q: want a day as YYYY-MM-DD", k, v)
		}
		return d, true, nil
	}
	to, ok, err := parse("to")
	if err != nil {
		return usageWindow{}, err
	}
	if !ok {
		n := now().In(loc)
		to = time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, loc)
	}
	from, ok, err := parse("from")
	if err != nil {
		return usageWindow{}, err
	}
	if !ok {
		from = to.AddDate(0, 0, -(defaultUsageDays - 1))
	}
	if from.After(to) {
		return usageWindow{}, fmt.Errorf("from=%s is after to=%s", from.Format(time.DateOnly), to.Format(time.DateOnly))
	}
	if to.Sub(from) > 3700*24*time.Hour {
		return usageWindow{}, fmt.Errorf("from=%s to=%s: a window of at most ten years", from.Format(time.DateOnly), to.Format(time.DateOnly))
	}
	return usageWindow{from: from.Format(time.DateOnly), to: to.Format(time.DateOnly), start: from, end: to.AddDate(0, 0, 1)}, nil
}

// usageReply is GET /api/usage's answer.
type usageReply struct {
	From    string `json:"from"`
	To      string `json:"to"`
	GroupBy string `json:"group_by"`
	projections.UsageReport
}

func (s *server) getUsage(w http.ResponseWriter, r *http.Request) {
	u := s.cfg.Usage
	q := r.URL.Query()
	for k := range q {
		if k != "from" && k != "to" && k != "group_by" {
			writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("unknown parameter %q (have: from, to, group_by)", k))
			return
		}
	}
	by := cmp.Or(q.Get("group_by"), projections.ByAgent)
	if !slices.Contains(projections.UsageGroupings, by) {
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("group_by=%q: want one of %s", by, strings.Join(projections.UsageGroupings, ", ")))
		return
	}
	win, err := u.window(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	u.caughtUp(r.Context())
	calls, err := projections.UsageCalls(u.DB, win.start, win.end)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, usageReply{From: win.from, To: win.to, GroupBy: by, UsageReport: projections.SumUsage(calls, by, u.Location)})
}

// routesUsage serves /api/usage and, with the site, /usage.
func (s *server) routesUsage(mux *router) {
	mux.HandleFunc("GET /api/usage", s.getUsage)
	if s.cfg.Usage.Budget != nil {
		mux.HandleFunc("GET /api/budget", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, s.cfg.Usage.Budget())
		})
	}
	if s.cfg.Pages == nil {
		return
	}
	u := s.cfg.Usage
	mux.HandleFunc("GET /usage", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
		sh, err := s.cfg.Pages.shell(r.Context(), "Usage", "", csrf)
		if err != nil {
			return nil, err
		}
		v := ui.UsageView{Shell: sh}
		win, werr := u.window(r.URL.Query())
		if werr != nil {
			v.Error = werr.Error() + "; showing the last 30 days"
			win, _ = u.window(nil)
		}
		u.caughtUp(r.Context())
		calls, err := projections.UsageCalls(u.DB, win.start, win.end)
		if err != nil {
			return nil, err
		}
		fillUsage(&v, win, calls, u.Location)
		return ui.UsagePage(v), nil
	}))
}

// topConversations is how many conversations the page lists.
const topConversations = 10

// fillUsage maps the window's calls to the page's view.
func fillUsage(v *ui.UsageView, win usageWindow, calls []projections.UsageCall, loc *time.Location) {
	v.From, v.To = win.from, win.to
	total := projections.SumUsage(calls, projections.ByAgent, loc)
	v.TotalUSD, v.Calls, v.UnknownCostCalls = dollars(total.TotalUSD), total.Calls, total.UnknownCostCalls
	if total.CachedInputTokens > 0 {
		v.CacheSaved, v.CachedTokens = dollars(total.CacheSavedUSD), thousands(total.CachedInputTokens)
	}
	rows := func(rep projections.UsageReport, label func(key string) (string, string)) []ui.UsageRow {
		gs := slices.Clone(rep.Groups)
		slices.SortStableFunc(gs, func(a, b projections.UsageGroup) int {
			return cmp.Or(cmp.Compare(b.USD, a.USD), cmp.Compare(b.Calls, a.Calls))
		})
		out := make([]ui.UsageRow, 0, len(gs))
		for _, g := range gs {
			l, link := label(g.Key)
			out = append(out, ui.UsageRow{Key: g.Key, Label: l, Link: link, USD: dollars(g.USD), Calls: g.Calls, UnknownCostCalls: g.UnknownCostCalls,
				Tokens: tokensLine(g)})
		}
		return out
	}
	plain := func(k string) (string, string) { return cmp.Or(k, "(unknown)"), "" }
	v.Agents = rows(total, plain)
	v.Purposes = rows(projections.SumUsage(calls, projections.ByPurpose, loc), plain)
	var inConvs []projections.UsageCall
	for _, c := range calls {
		if c.Conversation != "" {
			inConvs = append(inConvs, c)
		}
	}
	v.Conversations = rows(projections.SumUsage(inConvs, projections.ByConversation, loc), func(k string) (string, string) { return k, "/c/" + k })
	if len(v.Conversations) > topConversations {
		v.Conversations = v.Conversations[:topConversations]
	}
	v.Chart = usageChart(win, calls, loc, v.Agents)
}

// chartColors are the agents' bar colours, in the order of the agents
// table (most spent first), cycling.
var chartColors = []string{"#3b7dd8", "#e07b39", "#3aa370", "#b458c4", "#d64545", "#8a8f2e", "#2aa6b3", "#7a6a58"}

// usageChart lays out the daily spend per agent as stacked bars, one
// column per day of the window.
func usageChart(win usageWindow, calls []projections.UsageCall, loc *time.Location, agents []ui.UsageRow) ui.UsageChart {
	const width, height, left, top, bottom = 760, 240, 52, 10, 28
	var days []string
	for d := win.start; d.Before(win.end); d = d.AddDate(0, 0, 1) {
		days = append(days, d.In(loc).Format(time.DateOnly))
	}
	color := map[string]string{}
	ch := ui.UsageChart{Width: width, Height: height}
	for i, a := range agents {
		color[a.Key] = chartColors[i%len(chartColors)]
		ch.Legend = append(ch.Legend, ui.UsageLegend{Name: a.Label, Fill: color[a.Key]})
	}
	type cell struct {
		usd   float64
		calls int
	}
	spend := map[string]map[string]*cell{} // day → agent → spend
	dayTotal := map[string]float64{}
	for _, c := range calls {
		d := c.At.In(loc).Format(time.DateOnly)
		if spend[d] == nil {
			spend[d] = map[string]*cell{}
		}
		x := spend[d][c.Agent]
		if x == nil {
			x = &cell{}
			spend[d][c.Agent] = x
		}
		x.calls++
		if c.CostUSD != nil {
			x.usd += *c.CostUSD
			dayTotal[d] += *c.CostUSD
		}
	}
	peak := 0.0
	for _, t := range dayTotal {
		peak = max(peak, t)
	}
	scale := niceCeiling(peak)
	plotH := float64(height - top - bottom)
	for i := 0; i <= 4; i++ {
		amount := scale * float64(i) / 4
		ch.Grid = append(ch.Grid, ui.UsageLabel{Y: float64(top) + plotH - plotH*float64(i)/4, Text: dollars(amount)})
	}
	slot := float64(width-left-8) / float64(max(len(days), 1))
	barW := math.Max(1, slot*0.7)
	every := max(1, len(days)/10) // at most about ten day labels
	for i, d := range days {
		x := float64(left) + slot*float64(i) + (slot-barW)/2
		y := float64(top) + plotH
		for _, a := range agents {
			c := spend[d][a.Key]
			if c == nil || c.usd <= 0 {
				continue
			}
			h := plotH * c.usd / scale
			y -= h
			ch.Bars = append(ch.Bars, ui.UsageBar{X: x, Y: y, W: barW, H: h, Fill: color[a.Key],
				Title: fmt.Sprintf("%s, %s: %s (%d calls)", a.Label, d, dollars(c.usd), c.calls)})
		}
		if i%every == 0 {
			ch.Labels = append(ch.Labels, ui.UsageLabel{X: float64(left) + slot*float64(i) + slot/2, Y: float64(height - 10), Text: d[5:]})
		}
	}
	return ch
}

// niceCeiling is the smallest of 1, 2, 2.5 or 5 × 10^k at or above v
// (a round top for the axis); 0.01 for nothing spent.
func niceCeiling(v float64) float64 {
	if v <= 0 {
		return 0.01
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// dollars shows an amount with cents, and the fractions of a cent small
// amounts need.
func dollars(v float64) string {
	if v < 0 {
		return "-" + dollars(-v) // a cache whose writes cost more than it saved
	}
	switch {
	case v == 0:
		return "$0"
	case v < 1:
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// thousands writes n with commas: 12,300.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// tokensLine is a usage row's tokens: in (of which cached), out.
func tokensLine(g projections.UsageGroup) string {
	if g.CachedInputTokens > 0 {
		return fmt.Sprintf("%s in (%s cached) · %s out", thousands(g.InputTokens), thousands(g.CachedInputTokens), thousands(g.OutputTokens))
	}
	return fmt.Sprintf("%s in · %s out", thousands(g.InputTokens), thousands(g.OutputTokens))
}
