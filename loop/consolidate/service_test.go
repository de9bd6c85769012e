package consolidate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	_ "time/tzdata" // the owner's zone, whatever the host has

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/consolidate"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/schemas"
	"github.com/my-agent-crew/crew/tools"
)

const oldMemory = "# Memory\n\n- Owner runs 10k on Sundays.\n- Dentist on 2026-12-03.\n"

// home is one crew: a real embedded JetStream and agents in temp
// folders. The owner lives in
// Paris, and it is 00:30 on 2026-12-01 there (23:30 UTC the day before).
type home struct {
	t      *testing.T
	log    *events.Log
	agents map[string]consolidate.Agent
	models llm.Models
	calls  atomic.Int32 // model lookups
}

var now = time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC)

func newHome(t *testing.T) *home {
	t.Helper()
	_, log := eventstest.Start(t)
	h := &home{t: t, log: log, agents: map[string]consolidate.Agent{}}
	providers := llm.NewProviders(llm.Config{})
	var mu sync.Mutex
	cache := map[string]llm.Model{}
	h.models = llm.ModelsFunc(func(route string) (llm.Model, error) {
		h.calls.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if m, ok := cache[route]; ok {
			return m, nil
		}
		r, err := llm.ParseRoute(route)
		if err != nil {
			return nil, err
		}
		m, err := providers.Model(r)
		if err == nil {
			cache[route] = m
		}
		return m, err
	})
	return h
}

// agent makes an agent folder with MEMORY.md and notes (day → text) and
// routes that answer with the replies in order.
func (h *home) agent(id string, autonomous bool, notes map[string]string, replies ...string) consolidate.Agent {
	h.t.Helper()
	dir := filepath.Join(h.t.TempDir(), id)
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o755); err != nil {
		h.t.Fatal(err)
	}
	writeFile(h.t, filepath.Join(dir, "MEMORY.md"), oldMemory)
	for day, text := range notes {
		writeFile(h.t, filepath.Join(dir, "memory", day+".md"), text)
	}
	a := consolidate.Agent{ID: id, Dir: dir, Autonomous: autonomous}
	if len(replies) > 0 {
		var script strings.Builder
		for _, r := range replies {
			b, _ := json.Marshal(r)
			fmt.Fprintf(&script, "- text: %s\n", b)
		}
		path := filepath.Join(h.t.TempDir(), id+".yaml")
		writeFile(h.t, path, script.String())
		a.Routes = []string{"fake:script:" + path}
	}
	h.agents[id] = a
	return a
}

func (h *home) service() *consolidate.Service {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		h.t.Fatal(err)
	}
	return consolidate.New(consolidate.Config{
		Log: h.log, Models: h.models, Clock: clockAt{loop.WallClock{Zone: paris}},
		Crew: crewOf(h.agents),
	})
}

// clockAt is the wall clock of a zone stopped at now.
type clockAt struct{ loop.WallClock }

func (clockAt) Now() time.Time { return now }

// crewOf is a crew of these consolidation agents.
type crewOf map[string]consolidate.Agent

func (c crewOf) Agent(id string) (loop.Agent, bool) {
	a, ok := c[id]
	return loop.Agent{ID: a.ID, Dir: a.Dir, Routes: a.Routes, Autonomous: a.Autonomous}, ok
}
func (crewOf) Roster() string                  { return "" }
func (crewOf) Spec(route string) llm.ModelSpec { return loop.Agents(nil).Spec(route) }

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var weekNotes = map[string]string{
	"2026-11-24": "- 09:00 too old: eight days ago\n", // before the window
	"2026-11-25": "- 08:00 switched to oat milk\n",
	"2026-11-30": "- 18:00 dentist moved to 2026-12-05\n",
	"2026-12-01": "- 00:10 cannot sleep\n",
}

// R-MEM-2: a supervised agent's proposal always waits, even one that only
// adds lines; approve writes it, a second decision is refused, rollback
// puts the old text back.
func TestConsolidateSupervisedWaitsForApproval(t *testing.T) {
	h := newHome(t)
	newMemory := oldMemory + "- Prefers oat milk.\n"
	a := h.agent("pong", false, weekNotes, newMemory)
	svc := h.service()
	ctx := t.Context()

	p, err := svc.Consolidate(ctx, "pong", consolidate.TriggerCLI)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != events.ProposalAddOnly || p.Status != consolidate.StatusPending || p.Auto || p.Added != 1 || p.Removed != 0 ||
		!strings.Contains(p.Reason, "not autonomous") || p.Trigger != "cli" || p.Route != a.Routes[0] || p.CostUSD == nil {
		t.Fatalf("proposal = %+v", p)
	}
	if got, want := strings.Join(p.Days, ","), "2026-11-25,2026-11-30,2026-12-01"; got != want {
		t.Errorf("days read = %s, want %s (7 days up to today in Paris)", got, want)
	}
	if last := p.Diff[len(p.Diff)-1]; last.Op != consolidate.Add || last.Text != "- Prefers oat milk." {
		t.Errorf("diff ends with %+v", last)
	}
	if got := readFile(t, filepath.Join(a.Dir, "MEMORY.md")); got != oldMemory {
		t.Fatalf("MEMORY.md changed before approval:\n%s", got)
	}

	p, err = svc.Decide(ctx, p.ID, true, "web")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != consolidate.StatusApplied || p.Auto || p.Decision != events.ProposalApproved || p.DecisionChannel != "web" {
		t.Errorf("after approve: %+v", p)
	}
	if got := readFile(t, filepath.Join(a.Dir, "MEMORY.md")); got != newMemory {
		t.Errorf("MEMORY.md after approve:\n%s", got)
	}
	if _, err := svc.Decide(ctx, p.ID, false, "web"); !errors.Is(err, consolidate.ErrAlreadyDecided) || !strings.Contains(err.Error(), "was approved") {
		t.Errorf("second decision = %v, want ErrAlreadyDecided", err)
	}

	p, err = svc.Rollback(ctx, p.ID, "api")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != consolidate.StatusRolledBack || p.RollbackChannel != "api" {
		t.Errorf("after rollback: %+v", p)
	}
	if got := readFile(t, filepath.Join(a.Dir, "MEMORY.md")); got != oldMemory {
		t.Errorf("MEMORY.md after rollback:\n%s", got)
	}
	if _, err := svc.Rollback(ctx, p.ID, "api"); !errors.Is(err, consolidate.ErrNotApplied) {
		t.Errorf("second rollback = %v, want ErrNotApplied", err)
	}
	if _, err := svc.Decide(ctx, "nosuch", true, "api"); !errors.Is(err, consolidate.ErrUnknownProposal) {
		t.Errorf("Decide(nosuch) = %v, want ErrUnknownProposal", err)
	}

	// The list shows it without the texts, with its counts.
	list, err := svc.List(ctx, "pong")
	if err != nil || len(list) != 1 || list[0].ID != p.ID || list[0].Old != "" || list[0].Diff != nil || list[0].Added != 1 {
		t.Errorf("List = %+v, %v", list, err)
	}
	h.validateEvents("pong", 4) // model_called (consolidate), proposed, decided, rolled back
}

// validateEvents checks the agent's stored events against their schemas.
func (h *home) validateEvents(agent string, want int) {
	h.t.Helper()
	envs, err := h.log.ReadAll(h.t.Context(), events.Agent(agent).Filter(), 0)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(envs) != want {
		h.t.Errorf("%d events on %s, want %d", len(envs), events.Agent(agent), want)
	}
	for _, env := range envs {
		if env.Type == events.TypeModelCalled {
			e, _ := env.Decode()
			if mc := e.(*events.ModelCalled); mc.Purpose != events.PurposeConsolidate || mc.RunID != "" {
				h.t.Errorf("consolidation's model_called: purpose %q run %q, want consolidate and no run", mc.Purpose, mc.RunID)
			}
		}
		body, _ := json.Marshal(env)
		if err := schemas.ValidateJSON(events.SchemaPath(env.Type, env.V), body); err != nil {
			h.t.Errorf("%s does not validate: %v\n%s", env.Type, err, body)
		}
	}
}

// R-MEM-2: an autonomous agent applies add-only and date-only proposals
// at once; a removal, a change or an invented date still waits.
func TestConsolidateAutonomousAppliesOnlyAddOnlyOrDateOnly(t *testing.T) {
	h := newHome(t)
	replies := []string{
		oldMemory + "- Prefers oat milk.\n",                                                 // add_only: applied
		strings.Replace(oldMemory+"- Prefers oat milk.\n", "2026-12-03", "2026-12-05", 1),   // date_only, date in the notes: applied
		"# Memory\n\n- Prefers oat milk.\n",                                                 // removal: waits
		strings.Replace(oldMemory, "2026-12-03", "2026-12-24", 1) + "- Prefers oat milk.\n", // unsourced date: waits
	}
	a := h.agent("coach", true, weekNotes, replies...)
	svc := h.service()
	ctx := t.Context()
	memory := filepath.Join(a.Dir, "MEMORY.md")

	want := []struct {
		kind   string
		status string
		file   string
	}{
		{events.ProposalAddOnly, consolidate.StatusApplied, replies[0]},
		{events.ProposalDateOnly, consolidate.StatusApplied, replies[1]},
		{events.ProposalRemoval, consolidate.StatusPending, replies[1]},
		{events.ProposalUnknownDate, consolidate.StatusPending, replies[1]},
	}
	for i, w := range want {
		p, err := svc.Consolidate(ctx, "coach", consolidate.TriggerJob)
		if err != nil {
			t.Fatal(err)
		}
		if p.Kind != w.kind || p.Status != w.status || p.Auto != (w.status == consolidate.StatusApplied) {
			t.Errorf("proposal %d: kind %s status %s auto %v (%s), want %s %s", i, p.Kind, p.Status, p.Auto, p.Reason, w.kind, w.status)
		}
		if got := readFile(t, memory); got != w.file {
			t.Errorf("MEMORY.md after proposal %d:\n%s\nwant\n%s", i, got, w.file)
		}
	}
	list, err := svc.List(ctx, "coach")
	if err != nil || len(list) != 4 || list[0].Kind != events.ProposalUnknownDate || !strings.Contains(list[0].Reason, "2026-12-24") {
		t.Fatalf("List = %+v, %v", list, err)
	}
	// The auto-applied date change can be rolled back: the file is still
	// what it wrote.
	if _, err := svc.Rollback(ctx, list[2].ID, "web"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, memory); got != replies[0] {
		t.Errorf("MEMORY.md after rolling back the date change:\n%s", got)
	}
	h.validateEvents("coach", 11) // 4 × (model_called, proposed), 2 auto-decided, 1 rolled back
}

func TestConsolidateWithoutNotesCallsNoModel(t *testing.T) {
	h := newHome(t)
	h.agent("pong", false, map[string]string{"2026-11-24": "- too old\n", "2026-11-30": "  \n"}, "unused\n")
	_, err := h.service().Consolidate(t.Context(), "pong", consolidate.TriggerAPI)
	if !errors.Is(err, consolidate.ErrNothingToConsolidate) || !strings.Contains(err.Error(), "from 2026-11-25 to 2026-12-01") {
		t.Errorf("Consolidate = %v, want ErrNothingToConsolidate naming the days", err)
	}
	if n := h.calls.Load(); n != 0 {
		t.Errorf("%d model lookups, want none", n)
	}
	if _, err := h.service().Consolidate(t.Context(), "nobody", consolidate.TriggerAPI); !errors.Is(err, consolidate.ErrUnknownAgent) {
		t.Errorf("Consolidate(nobody) = %v, want ErrUnknownAgent", err)
	}
}

// A route that fails passes to the next, through the real OpenAI-
// compatible client; the prompt holds MEMORY.md and the week's notes only.
func TestConsolidateFallsBackToTheNextRoute(t *testing.T) {
	newMemory := oldMemory + "- Prefers oat milk.\n"
	var prompt atomic.Value
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Model == "vendor/broken" {
			http.Error(w, `{"error":{"message":"upstream exploded"}}`, http.StatusInternalServerError)
			return
		}
		prompt.Store(req.Messages[len(req.Messages)-1].Content)
		text, _ := json.Marshal(newMemory)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":%s},"finish_reason":"stop"}]}`+"\n\n", text)
		fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30,"cost":0.0002}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer api.Close()
	h := newHome(t)
	providers := llm.NewProviders(llm.Config{OpenRouterAPIKey: "test-key", OpenRouterBaseURL: api.URL + "/v1"})
	h.models = llm.ModelsFunc(func(route string) (llm.Model, error) {
		r, err := llm.ParseRoute(route)
		if err != nil {
			return nil, err
		}
		return providers.Model(r)
	})
	a := h.agent("pong", false, weekNotes)
	a.Routes = []string{"openrouter:vendor/broken", "openrouter:vendor/good"}
	h.agents["pong"] = a

	p, err := h.service().Consolidate(t.Context(), "pong", consolidate.TriggerAPI)
	if err != nil {
		t.Fatal(err)
	}
	if p.Route != "openrouter:vendor/good" || p.CostUSD == nil || *p.CostUSD != 0.0002 || p.Kind != events.ProposalAddOnly {
		t.Errorf("proposal = %+v", p)
	}
	sent, _ := prompt.Load().(string)
	for _, want := range []string{"Owner runs 10k on Sundays", "## memory/2026-11-25.md", "switched to oat milk", "## memory/2026-12-01.md", "Today is 2026-12-01 (Europe/Paris)"} {
		if !strings.Contains(sent, want) {
			t.Errorf("prompt lacks %q:\n%s", want, sent)
		}
	}
	if strings.Contains(sent, "too old") {
		t.Errorf("prompt holds a note from before the 7 days:\n%s", sent)
	}

	// Every route failing files nothing and names each failure.
	a.Routes = []string{"openrouter:vendor/broken"}
	h.agents["pong"] = a
	if _, err := h.service().Consolidate(t.Context(), "pong", consolidate.TriggerAPI); !errors.Is(err, consolidate.ErrModel) || !strings.Contains(err.Error(), "vendor/broken") {
		t.Errorf("Consolidate with a broken route = %v, want ErrModel", err)
	}
	if list, _ := h.service().List(t.Context(), ""); len(list) != 1 {
		t.Errorf("%d proposals, want 1", len(list))
	}
}

// MEMORY.md edited by hand after the proposal: approving would lose the
// edit, so it is refused; rejecting still works. Likewise rollback after
// an edit.
func TestDecideRefusesWhenMemoryChanged(t *testing.T) {
	h := newHome(t)
	a := h.agent("pong", false, weekNotes, oldMemory+"- One.\n", oldMemory+"- Two.\n")
	svc := h.service()
	ctx := t.Context()
	memory := filepath.Join(a.Dir, "MEMORY.md")

	p1, err := svc.Consolidate(ctx, "pong", consolidate.TriggerCLI)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, memory, oldMemory+"- Edited by hand.\n")
	if _, err := svc.Decide(ctx, p1.ID, true, "web"); !errors.Is(err, consolidate.ErrMemoryChanged) || !strings.Contains(err.Error(), "reject it and consolidate pong again") {
		t.Errorf("approve after an edit = %v, want ErrMemoryChanged", err)
	}
	if got := readFile(t, memory); got != oldMemory+"- Edited by hand.\n" {
		t.Errorf("MEMORY.md = %q: the refused approval wrote it", got)
	}
	if p, err := svc.Decide(ctx, p1.ID, false, "web"); err != nil || p.Status != consolidate.StatusRejected {
		t.Errorf("reject = %+v, %v", p, err)
	}

	p2, err := svc.Consolidate(ctx, "pong", consolidate.TriggerCLI)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Decide(ctx, p2.ID, true, "web"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, memory, oldMemory+"- Edited again.\n")
	if _, err := svc.Rollback(ctx, p2.ID, "web"); !errors.Is(err, consolidate.ErrMemoryChanged) {
		t.Errorf("rollback after an edit = %v, want ErrMemoryChanged", err)
	}
}

// Two processes deciding the same proposal at once: the scope's expected
// sequence lets exactly one decision be stored.
func TestConcurrentDecisionsOnlyOneWins(t *testing.T) {
	h := newHome(t)
	a := h.agent("pong", false, weekNotes, oldMemory+"- One.\n")
	p, err := h.service().Consolidate(t.Context(), "pong", consolidate.TriggerCLI)
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		svc := h.service() // each its own process: no shared mutex
		wg.Go(func() { _, errs[i] = svc.Decide(t.Context(), p.ID, i%2 == 0, fmt.Sprint("proc", i)) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, consolidate.ErrAlreadyDecided):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d decisions won, want 1: %v", won, errs)
	}
	decided, err := h.log.ReadAll(t.Context(), events.Agent("pong").Subject(events.TypeMemoryProposalDecided), 0)
	if err != nil || len(decided) != 1 {
		t.Fatalf("%d decisions stored (%v), want 1", len(decided), err)
	}
	final, _ := h.service().Get(t.Context(), p.ID)
	want := oldMemory
	if final.Status == consolidate.StatusApplied {
		want = final.New
	}
	if got := readFile(t, filepath.Join(a.Dir, "MEMORY.md")); got != want {
		t.Errorf("MEMORY.md = %q, want %q (status %s)", got, want, final.Status)
	}
}

// TestPersonaProposalAppliedOnlyIfUnchanged (R-X-7): a tool's write to
// AGENTS.md or SOUL.md is filed as a pending proposal of that file — even
// for an autonomous agent, whatever its kind — and nothing is written; an
// approval writes the file; an approval after the file changed is refused
// naming the file ("changed since") and writes nothing; a second decision
// is refused; rollback puts the old text back.
func TestPersonaProposalAppliedOnlyIfUnchanged(t *testing.T) {
	h := newHome(t)
	a := h.agent("coach", true, nil)
	agentsMD, soulMD := filepath.Join(a.Dir, "AGENTS.md"), filepath.Join(a.Dir, "SOUL.md")
	writeFile(t, agentsMD, "# Coach\n")
	writeFile(t, soulMD, "Calm.\n")
	svc := h.service()
	ctx := t.Context()

	id, err := svc.ProposePersona(ctx, tools.PersonaChange{Agent: "coach", File: "AGENTS.md", Old: "# Coach\n", New: "# Coach\n- Runs on Sundays.\n",
		Tool: "workspace_write", RunID: "r1", CallID: "k1", Conversation: "web-1", Untrusted: "fetch_url"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Get(ctx, id)
	if err != nil || p.Status != consolidate.StatusPending || p.Auto || p.File != "AGENTS.md" || p.Trigger != events.TriggerTool ||
		p.Tool != "workspace_write" || p.RunID != "r1" || p.CallID != "k1" || p.Conversation != "web-1" || p.Untrusted != "fetch_url" || p.Added != 1 {
		t.Fatalf("proposal = %+v, %v", p, err)
	}
	if got := readFile(t, agentsMD); got != "# Coach\n" {
		t.Fatalf("AGENTS.md written before approval: %q", got)
	}
	if p, err := svc.Decide(ctx, id, true, "web"); err != nil || p.Status != consolidate.StatusApplied {
		t.Fatalf("approve = %+v, %v", p, err)
	}
	if got := readFile(t, agentsMD); got != "# Coach\n- Runs on Sundays.\n" {
		t.Errorf("AGENTS.md after approval = %q", got)
	}
	if got := readFile(t, filepath.Join(a.Dir, "MEMORY.md")); got != oldMemory {
		t.Errorf("MEMORY.md touched: %q", got)
	}
	if _, err := svc.Decide(ctx, id, false, "api"); !errors.Is(err, consolidate.ErrAlreadyDecided) {
		t.Errorf("second decision = %v", err)
	}
	if _, err := svc.Rollback(ctx, id, "web"); err != nil || readFile(t, agentsMD) != "# Coach\n" {
		t.Errorf("rollback = %v, AGENTS.md %q", err, readFile(t, agentsMD))
	}

	// SOUL.md changed by the owner after the proposal: refused.
	id2, err := svc.ProposePersona(ctx, tools.PersonaChange{Agent: "coach", File: "SOUL.md", Old: "Calm.\n", New: "Harsh.\n", Tool: "workspace_edit"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, soulMD, "Calm and warm.\n")
	if _, err := svc.Decide(ctx, id2, true, "web"); !errors.Is(err, consolidate.ErrMemoryChanged) || !strings.Contains(err.Error(), "SOUL.md changed since proposal "+id2) {
		t.Errorf("approve after the owner's edit = %v, want SOUL.md changed since", err)
	}
	if got := readFile(t, soulMD); got != "Calm and warm.\n" {
		t.Errorf("SOUL.md = %q: the refused approval wrote it", got)
	}
	if p, err := svc.Decide(ctx, id2, false, "web"); err != nil || p.Status != consolidate.StatusRejected {
		t.Errorf("reject = %+v, %v", p, err)
	}
	// Only the persona files are proposed this way.
	if _, err := svc.ProposePersona(ctx, tools.PersonaChange{Agent: "coach", File: "agent.yaml", New: "x"}); err == nil {
		t.Error("agent.yaml proposed")
	}
	// Two proposals, two decisions, a rollback: each matches its schema.
	h.validateEvents("coach", 5)
}
