package projections

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-LOOP-5: the usage ledger's sums by agent, conversation, route, day (the
// owner's) and purpose match the model_called events of a randomized run
// over several days, scopes and purposes, unknown costs counted apart and
// never as zero; a rebuild gives the same bytes and the same sums.
func TestUsageLedgerSumsMatchModelCalledEvents(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	s.now = time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(19, 5))
	loc := time.FixedZone("owner", 7*3600) // 17:00 UTC is midnight there

	agents := []string{"coach", "chef", "master"}
	convAgent := map[string]string{}
	var convs []string
	s.add(events.Job("nightly"), &events.JobScheduled{Agent: "chef", Name: "nightly", Cron: "0 2 * * *", Prompt: "x", Origin: events.OriginProfile})

	type want struct {
		usd           float64
		calls, unk    int
		input, output int
	}
	wants := map[string]map[string]*want{}
	for _, by := range UsageGroupings {
		wants[by] = map[string]*want{}
	}
	var total float64
	var unknown, calls int
	var last uint64
	for i := range 300 {
		s.now = s.now.Add(time.Duration(rng.IntN(1800)) * time.Second)
		if len(convs) == 0 || rng.IntN(10) == 0 {
			id := fmt.Sprintf("c%d", len(convs))
			a := agents[rng.IntN(len(agents))]
			convs, convAgent[id] = append(convs, id), a
			s.conv(id, &events.ConversationOpened{Agent: a, Channel: "web"})
		}
		e := &events.ModelCalled{Route: []string{"openrouter:x/y", "ollama:q", "fake:echo"}[rng.IntN(3)], Model: "m",
			InputTokens: rng.IntN(5000), OutputTokens: rng.IntN(900)}
		if rng.IntN(4) > 0 {
			e.CostUSD = cost(float64(rng.IntN(10000)) / 1e6)
		}
		if rng.IntN(12) == 0 {
			e.Error = "503 overloaded"
		}
		var scope events.Scope
		var agent, conv string
		switch k := rng.IntN(10); {
		case k < 6:
			conv = convs[rng.IntN(len(convs))]
			agent, scope = convAgent[conv], events.Conv(conv)
			e.RunID, e.Step = fmt.Sprintf("r%d", i), 1
			if rng.IntN(5) == 0 {
				e.Purpose = events.PurposeEscalation
			}
		case k < 7:
			conv = convs[rng.IntN(len(convs))]
			agent, scope = convAgent[conv], events.Conv(conv)
			e.Purpose = events.PurposeSummary
		case k < 8:
			agent = agents[rng.IntN(len(agents))]
			scope, e.Purpose = events.Agent(agent), events.PurposeConsolidate
		default:
			agent, scope, e.Purpose = "chef", events.Job("nightly"), events.PurposeScript
		}
		env := s.add(scope, e)
		last = env.Seq
		keys := map[string]string{ByAgent: agent, ByConversation: conv, ByRoute: e.Route, ByPurpose: e.PurposeOf(),
			ByDay: env.Time.In(loc).Format(time.DateOnly)}
		for by, k := range keys {
			w := wants[by][k]
			if w == nil {
				w = &want{}
				wants[by][k] = w
			}
			w.calls++
			w.input += e.InputTokens
			w.output += e.OutputTokens
			if e.CostUSD != nil {
				w.usd += *e.CostUSD
			} else if e.Error == "" {
				w.unk++
			}
		}
		calls++
		if e.CostUSD != nil {
			total += *e.CostUSD
		} else if e.Error == "" {
			unknown++
		}
	}
	if unknown == 0 || len(wants[ByDay]) < 3 || len(wants[ByPurpose]) != 5 {
		t.Fatalf("the seed covers %d unknown costs, %d days, %d purposes; change it", unknown, len(wants[ByDay]), len(wants[ByPurpose]))
	}

	live := openDB(t, "")
	r := startRunner(t, log, live, config{})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt := openDB(t, "")
	if err := rebuild(ctx, log, rebuilt, Usage{}, 13); err != nil {
		t.Fatal(err)
	}
	a, err := Dump(live, Usage{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Dump(rebuilt, Usage{})
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatalf("rebuilt ledger differs from live:\n%s", firstDiff(string(b), string(a)))
	}

	for _, tc := range []struct{ name string }{{"live"}, {"rebuilt"}} {
		db := live
		if tc.name == "rebuilt" {
			db = rebuilt
		}
		got, err := UsageCalls(db, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		for _, by := range UsageGroupings {
			rep := SumUsage(got, by, loc)
			if rep.Calls != calls || rep.UnknownCostCalls != unknown || math.Abs(rep.TotalUSD-total) > 1e-9 {
				t.Errorf("%s by %s: %d calls, %d unknown, $%v; want %d, %d, $%v", tc.name, by, rep.Calls, rep.UnknownCostCalls, rep.TotalUSD, calls, unknown, total)
			}
			if len(rep.Groups) != len(wants[by]) {
				t.Errorf("%s by %s: %d groups, want %d", tc.name, by, len(rep.Groups), len(wants[by]))
			}
			for _, g := range rep.Groups {
				w := wants[by][g.Key]
				if w == nil || g.Calls != w.calls || g.UnknownCostCalls != w.unk || g.InputTokens != w.input || g.OutputTokens != w.output || math.Abs(g.USD-w.usd) > 1e-9 {
					t.Errorf("%s by %s, %q: %+v, want %+v", tc.name, by, g.Key, g, w)
				}
			}
		}
	}
}
