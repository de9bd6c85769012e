package projections

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// seedRandom appends n events of a plausible but messy history: several
// conversations, runs and delegated child runs (some in the parent's
// conversation), unknown costs, tool calls left without completion, events
// naming unknown runs, closed conversations and a job scope. It returns
// the last sequence.
func seedRandom(s *seeder, rng *rand.Rand, n int) uint64 {
	type run struct {
		id, conv string
		step     int
		asked    []string // tool call ids the model asked for, not yet called
		called   []string // called, not yet completed
		kids     []string // conversations delegated from it
	}
	var convs []string
	var running []*run
	nRuns, nCalls := 0, 0
	var last uint64
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	for range n {
		switch k := rng.IntN(100); {
		case len(convs) == 0 || k < 6:
			id := fmt.Sprintf("c%d", len(convs))
			e := &events.ConversationOpened{Agent: pick([]string{"coach", "chef"}), Channel: "web", Day: "2026-11-30"}
			if rng.IntN(3) == 0 {
				e.Title = "Titled " + id
			}
			if len(running) > 0 && rng.IntN(2) == 0 {
				parent := running[rng.IntN(len(running))]
				e.Channel, e.ParentRunID, e.RootID = "delegate", parent.id, parent.conv
				parent.kids = append(parent.kids, id)
				switch {
				case len(parent.called) > 0:
					e.ParentCallID = pick(parent.called)
				case rng.IntN(2) == 0:
					nCalls++
					e.ParentCallID = fmt.Sprintf("call%d", nCalls) // the call event is missing
				}
			}
			convs = append(convs, id)
			last = s.conv(id, e)
		case k < 28:
			text := strings.Repeat(pick([]string{"plan my week ", "été 🏃 ", "what now?\n"}), 1+rng.IntN(12))
			last = s.conv(pick(convs), &events.MessageReceived{Channel: "web", Text: text})
		case k < 40:
			nRuns++
			r := &run{id: fmt.Sprintf("r%d", nRuns), conv: pick(convs)}
			e := &events.RunStarted{RunID: r.id, Agent: "coach", Trigger: "message"}
			if len(running) > 0 && rng.IntN(3) == 0 {
				parent := running[rng.IntN(len(running))]
				e.ParentRunID, e.Trigger = parent.id, "delegate"
				switch {
				case rng.IntN(2) == 0:
					r.conv = parent.conv
				case len(parent.kids) > 0:
					r.conv = pick(parent.kids)
				}
			}
			running = append(running, r)
			last = s.conv(r.conv, e)
		case len(running) == 0:
			last = s.conv(pick(convs), &events.MessageReceived{Channel: "telegram:1", Text: "ping"})
		case k < 62:
			r := running[rng.IntN(len(running))]
			if rng.IntN(4) > 0 {
				r.step++
			}
			e := &events.ModelCalled{RunID: r.id, Step: r.step, Route: "openrouter:x/y", Model: "x/y",
				Text: strings.Repeat("answer ", rng.IntN(100)), InputTokens: rng.IntN(5000), OutputTokens: rng.IntN(900), LatencyMS: int64(rng.IntN(3000))}
			if rng.IntN(4) > 0 {
				e.CostUSD = cost(float64(rng.IntN(10000)) / 1e6)
			}
			if rng.IntN(10) == 0 {
				e.Error = "429 too many requests"
			}
			for range rng.IntN(3) {
				nCalls++
				id := fmt.Sprintf("call%d", nCalls)
				e.ToolCalls = append(e.ToolCalls, events.ToolCallRequest{ID: id, Name: "workspace_read", Arguments: json.RawMessage(`{"path":"notes.md"}`)})
				r.asked = append(r.asked, id)
			}
			if rng.IntN(5) == 0 {
				last = s.conv(r.conv, &events.RouteFallback{RunID: r.id, Step: r.step, From: "openrouter:a/b", To: "openrouter:x/y", Error: "503 overloaded"})
			}
			last = s.conv(r.conv, e)
			switch rng.IntN(12) {
			case 0:
				last = s.conv(r.conv, &events.Escalated{RunID: r.id, Step: r.step, Reason: pick([]string{"loop", "error"}), Route: "openrouter:big/model", Error: "x"})
			case 1:
				last = s.conv(r.conv, &events.GuardReminded{RunID: r.id, Step: r.step, Tool: "workspace_read", Count: 3, Text: "reminder"})
			case 2:
				last = s.conv(r.conv, &events.SteersApplied{RunID: r.id, Step: r.step, SteerIDs: []string{"s1"}})
			case 3, 4:
				if len(e.ToolCalls) > 0 {
					nCalls++
					aid := fmt.Sprintf("a%d", nCalls)
					last = s.conv(r.conv, &events.ApprovalRequested{ApprovalID: aid, RunID: r.id, Step: r.step, CallID: e.ToolCalls[0].ID, Tool: "workspace_read",
						Arguments: json.RawMessage(`{}`), ExpiresAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)})
					if rng.IntN(2) == 0 {
						last = s.conv(r.conv, &events.ApprovalDecided{ApprovalID: aid, Decision: pick([]string{events.DecisionApproved, events.DecisionDenied, events.DecisionExpired}), Always: rng.IntN(2) == 0})
					}
				}
			}
		case k < 76:
			r := running[rng.IntN(len(running))]
			if len(r.asked) == 0 {
				continue
			}
			id := r.asked[0]
			r.asked = r.asked[1:]
			r.called = append(r.called, id)
			last = s.conv(r.conv, &events.ToolCalled{RunID: r.id, Step: r.step, CallID: id, Tool: "workspace_read",
				Arguments: json.RawMessage(`{"path":"` + strings.Repeat("deep/", rng.IntN(80)) + `notes.md"}`)})
		case k < 86:
			r := running[rng.IntN(len(running))]
			if len(r.called) == 0 || rng.IntN(4) == 0 { // some stay without completion
				continue
			}
			id := r.called[0]
			r.called = r.called[1:]
			e := &events.ToolCompleted{RunID: r.id, Step: r.step, CallID: id, Tool: "workspace_read",
				Output: strings.Repeat("line\n", rng.IntN(200)), IsError: rng.IntN(5) == 0, DurationMS: int64(rng.IntN(400))}
			if rng.IntN(4) == 0 {
				e.Tool = "delegate"
				e.Delegate = &events.DelegateResult{Agent: "chef", Conversation: pick(convs), RunID: fmt.Sprintf("r%d", 1+rng.IntN(nRuns)),
					Status: pick([]string{events.RunDone, events.RunHalted})}
				if rng.IntN(3) > 0 {
					e.Delegate.CostUSD = cost(float64(rng.IntN(10000)) / 1e6)
				}
			}
			last = s.conv(r.conv, e)
		case k < 94:
			i := rng.IntN(len(running))
			r := running[i]
			running = slices.Delete(running, i, i+1)
			status := pick([]string{events.RunDone, events.RunDone, events.RunHalted, events.RunFailed})
			last = s.conv(r.conv, &events.RunFinished{RunID: r.id, Status: status, Reason: "max_steps"})
		case k < 97:
			last = s.conv(pick(convs), &events.ModelCalled{RunID: "ghost", Step: 1, Route: "r", Model: "m"})
		case k < 98:
			last = s.add(events.Job("nightly"), &events.MessageReceived{Channel: "job:nightly", Text: "run the report"}).Seq
		default:
			last = s.conv(pick(convs), &events.ConversationClosed{Reason: "day_changed"})
		}
	}
	if len(running) > 0 && n > 0 {
		// A delegated child left waiting on an approval: its root lists it.
		parent, id := running[0], fmt.Sprintf("c%d", len(convs))
		s.conv(id, &events.ConversationOpened{Agent: "chef", Channel: "delegate", RootID: parent.conv, ParentRunID: parent.id})
		s.conv(id, &events.RunStarted{RunID: "r-last", Agent: "chef", Trigger: "delegate", ParentRunID: parent.id})
		last = s.conv(id, &events.ApprovalRequested{ApprovalID: "a-last", RunID: "r-last", Step: 1, CallID: "call-last", Tool: "shell_run",
			Arguments: json.RawMessage(`{}`), ExpiresAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)})
	}
	return last
}

// Live application (the runner's batches) and Rebuild (batches of its own,
// and in place over a live database) give byte-identical projections.
func TestRebuildIsByteIdenticalToLive(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	last := seedRandom(newSeeder(t, log), rand.New(rand.NewPCG(7, 11)), 400)

	live := openDB(t, "")
	r := startRunner(t, log, live, config{})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := dumpAll(t, live)
	for _, must := range []string{`"run_children"`, `"run_orphans"`, `"run_delegations"`, `\"delegated_cost_usd\":`, `\"delegate\":{\"agent\":\"coach`, `Z\",\"conversation\":\"c`, `\"completed\":false`, `\"cost_usd\":null`, `\"status\":\"closed\"`, `\"status\":\"running\"`,
		`\"kind\":\"call\",\"call\":`, `\"result\":{\"output\":`, `\"queued\":[{`, `\"approvals\":[{`} {
		if !strings.Contains(want, must) {
			t.Errorf("seeded history lacks %s; change the seed or the generator", must)
		}
	}

	rebuilt := openDB(t, "")
	for _, p := range All() {
		if err := rebuild(ctx, log, rebuilt, p, 7); err != nil {
			t.Fatal(err)
		}
	}
	if got := dumpAll(t, rebuilt); got != want {
		t.Errorf("rebuilt projections differ from live:\n%s", firstDiff(got, want))
	}

	for _, p := range All() {
		if err := Rebuild(ctx, log, live, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := dumpAll(t, live); got != want {
		t.Errorf("projections rebuilt in place differ from live:\n%s", firstDiff(got, want))
	}

	// The rebuilt database resumes live: Rebuild deleted the consumers and
	// Open recreates them after the checkpoint.
	s := newSeeder(t, log)
	s.last[events.Conv("c0")] = mustLast(t, log, "c0")
	seq := s.conv("c0", &events.MessageReceived{Channel: "web", Text: "after the rebuild"})
	before, err := GetConversation(live, "c0")
	if err != nil {
		t.Fatal(err)
	}
	r = startRunner(t, log, live, config{})
	if err := r.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	after, err := GetConversation(live, "c0")
	if err != nil {
		t.Fatal(err)
	}
	if after.Messages != before.Messages+1 {
		t.Errorf("messages after resuming: got %d, want %d", after.Messages, before.Messages+1)
	}
}

func mustLast(t *testing.T, log *events.Log, conv string) uint64 {
	t.Helper()
	seq, err := log.Last(t.Context(), events.Conv(conv).Filter())
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("got %d lines, want %d", len(g), len(w))
}

// The same random history applied live, as it is appended: batches cut
// wherever lingering, the batch bound and a reader waiting for the log's
// end cut them, rebuild byte-identically too.
func TestRebuildIsByteIdenticalToLiveBatches(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	live := openDB(t, "")
	r := startRunner(t, log, live, config{batch: 5})
	stop := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() { // a page reading its writes, again and again
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := ReadYourWrites(ctx, log, r); err != nil {
				t.Error(err)
				return
			}
		}
	})
	last := seedRandom(newSeeder(t, log), rand.New(rand.NewPCG(3, 5)), 400)
	close(stop)
	reader.Wait()
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.Commits(); got >= last {
		t.Errorf("%d commits for %d live events: no batch held more than one", got, last)
	}
	want := dumpAll(t, live)
	rebuilt := openDB(t, "")
	for _, p := range All() {
		if err := rebuild(ctx, log, rebuilt, p, 7); err != nil {
			t.Fatal(err)
		}
	}
	if got := dumpAll(t, rebuilt); got != want {
		t.Errorf("rebuilt projections differ from live:\n%s", firstDiff(got, want))
	}
}
