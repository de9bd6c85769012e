package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
)

// longModel plays a long conversation: each owner message gets a tool
// call, each result a short answer, each compaction request a summary. It
// keeps every request it was sent.
type longModel struct {
	mu       sync.Mutex
	requests [][]llm.Message
	defs     []llm.Tool
	n        int
}

func (m *longModel) Call(_ context.Context, req llm.Request) (llm.Reply, error) {
	msgs := req.Messages
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, msgs)
	m.defs = req.Tools
	m.n++
	rep := llm.Reply{CostUSD: new(0.0)}
	last := msgs[len(msgs)-1]
	switch {
	case strings.HasPrefix(msgs[0].Text(), "You condense"):
		rep.Text = fmt.Sprintf("Tóm tắt %d: the owner asked for many lookups; each was answered.", m.n)
	case last.Role == llm.RoleTool:
		rep.Text = "Xong."
	default:
		rep.ToolCalls = []llm.ToolCall{{ID: fmt.Sprintf("call-%d", m.n), Name: "look", Arguments: fmt.Sprintf(`{"n":%d}`, m.n)}}
	}
	return rep, nil
}

// numbered answers each call with a distinct, long output.
type numbered struct{ runs int }

func (n *numbered) Def() tools.Def {
	return tools.Def{Name: "look", Description: "test tool", Params: json.RawMessage(`{"type":"object"}`)}
}

func (n *numbered) Run(_ context.Context, _ tools.Env, args json.RawMessage) (tools.Result, error) {
	n.runs++
	return tools.Result{Output: outputOf(args)}, nil
}

func outputOf(args json.RawMessage) string {
	return fmt.Sprintf("kết quả %s\n", args) + strings.Repeat("dòng dữ liệu của công cụ\n", 40)
}

// R-LOOP-7: 400 turns on a small window: every request fits, the three
// newest results stay whole, a compacted result comes back through
// tool_output_read, and the compacted state is the same from a snapshot
// plus its tail as from a cold replay; the export holds the compaction
// events and verifies.
func TestCompaction400TurnsStayUnderTheLimit(t *testing.T) {
	h := newHarness(t, nil, &numbered{})
	h.deps.HomeDir = t.TempDir() // spill/ under it
	m := &longModel{}
	h.agent.Routes = []string{"fake:long"}
	h.agent.Tools = append(h.agent.Tools, "look", "tool_output_read")
	h.deps.Models = llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })
	window, out := 8000, 1000
	h.spec = llm.NewCatalog(map[string]llm.ModelOverride{"fake:long": {ContextWindow: &window, MaxOutputTokens: &out}}).Lookup
	reg, err := tools.New(append(loop.Tools(), &numbered{}, builtin("tool_output_read"))...)
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Tools = reg
	turns := 400
	if testing.Short() {
		turns = 120
	}
	for i := range turns {
		h.send(fmt.Sprintf("tra cứu số %d", i))
		h.turn()
	}
	limit := window - out
	for i, req := range m.requests {
		if n := loop.Estimate(req, m.defs); n > limit {
			t.Fatalf("request %d holds ~%d tokens, over the limit %d", i, n, limit)
		}
		if err := wellFormed(req); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	evs := h.events()
	stages := map[string]int{}
	for _, c := range eventsOf[*events.ContextCompacted](evs) {
		stages[c.Stage]++
	}
	t.Logf("stages %v over %d requests", stages, len(m.requests))
	if stages[events.CompactMicro] == 0 || stages[events.CompactSummary] == 0 {
		t.Errorf("stages %v: want micro and summary compactions", stages)
	}
	purposes := 0
	for _, mc := range eventsOf[*events.ModelCalled](evs) {
		if mc.Purpose == events.PurposeCompaction {
			purposes++
		}
	}
	if purposes != stages[events.CompactSummary] {
		t.Errorf("%d compaction model calls for %d summaries", purposes, stages[events.CompactSummary])
	}
	// The last request: its three newest tool results are whole.
	last := m.requests[len(m.requests)-1]
	var results []llm.Message
	for _, msg := range last {
		if msg.Role == llm.RoleTool {
			results = append(results, msg)
		}
	}
	if len(results) < 3 {
		t.Fatalf("last request has %d tool results", len(results))
	}
	calls := map[string]json.RawMessage{}
	for _, c := range eventsOf[*events.ToolCalled](evs) {
		calls[c.CallID] = c.Arguments
	}
	for _, r := range results[len(results)-3:] {
		if r.Text() != outputOf(calls[r.ToolCallID]) {
			t.Errorf("newest result %s not whole: %q", r.ToolCallID, r.Text())
		}
	}
	// A micro-compacted result comes back through tool_output_read.
	var micro events.CompactedResult
	for _, c := range eventsOf[*events.ContextCompacted](evs) {
		if c.Stage == events.CompactMicro {
			micro = c.Results[0]
			break
		}
	}
	res, err := builtin("tool_output_read").Run(t.Context(), tools.Env{SpillDir: filepath.Join(h.deps.HomeDir, "spill", h.conv)}, json.RawMessage(fmt.Sprintf(`{"call_id":%q}`, micro.CallID)))
	if err != nil || !strings.Contains(res.Output, outputOf(calls[micro.CallID])) {
		t.Errorf("tool_output_read %s: %v %q", micro.CallID, err, res.Output)
	}
	// Snapshot plus tail equals a cold replay after compaction.
	snaps := &memSnapshots{}
	if _, err := loop.LoadState(t.Context(), h.log, snaps, h.conv); err != nil {
		t.Fatal(err)
	}
	h.send("một lần nữa")
	h.turn()
	warm, err := loop.LoadState(t.Context(), h.log, snaps, h.conv)
	if err != nil {
		t.Fatal(err)
	}
	cold := h.state()
	if snaps.saves == 0 || !reflect.DeepEqual(warm, cold) || len(cold.Compaction.Cuts) == 0 {
		t.Errorf("snapshot+tail differs from cold replay after compaction (saves %d, cuts %d)", snaps.saves, len(cold.Compaction.Cuts))
	}
	// The export (the audit trail) holds every compaction event, and
	// verifies under the audit key; an edited one does not.
	if got := exported(t, h, events.TypeContextCompacted); got[events.TypeContextCompacted] != len(eventsOf[*events.ContextCompacted](h.events())) {
		t.Errorf("export holds %d context_compacted, the log %d", got[events.TypeContextCompacted], len(eventsOf[*events.ContextCompacted](h.events())))
	}
	// The chat keeps every message: compaction changes what the model reads.
	if got := len(cold.Messages); got < 4*turns {
		t.Errorf("history holds %d messages after %d turns", got, turns)
	}
}

// wellFormed: every tool result answers a call of the assistant message
// before it, as providers require.
func wellFormed(req []llm.Message) error {
	open := map[string]bool{}
	for i, m := range req {
		switch m.Role {
		case llm.RoleAssistant:
			open = map[string]bool{}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case llm.RoleTool:
			id := m.ToolCallID
			if !open[id] {
				return fmt.Errorf("message %d: result of %s without its call", i, id)
			}
			delete(open, id)
		default:
			if len(open) > 0 {
				return fmt.Errorf("message %d: calls %v left without results", i, open)
			}
		}
	}
	return nil
}

// R-LOOP-7 snip: past 200 turns the old middle is archived behind one note,
// keeping the first turn and the newest 100; the chat keeps everything.
func TestCompactionSnipArchivesOldMiddle(t *testing.T) {
	h := newHarness(t, nil, &numbered{})
	m := &longModel{}
	h.agent.Routes = []string{"fake:long"}
	h.agent.Tools = append(h.agent.Tools, "look")
	h.deps.Models = llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })
	reg, _ := tools.New(append(loop.Tools(), &numbered{})...)
	h.deps.Tools = reg
	window := 10_000_000
	h.spec = llm.NewCatalog(map[string]llm.ModelOverride{"fake:long": {ContextWindow: &window}}).Lookup
	for i := range 202 {
		h.send(fmt.Sprintf("tra cứu %d", i))
		h.turn()
	}
	snips := 0
	for _, c := range eventsOf[*events.ContextCompacted](h.events()) {
		if c.Stage != events.CompactSnip {
			t.Errorf("stage %s on a window this large", c.Stage)
			continue
		}
		snips++
		if c.From != 4 || !strings.Contains(c.Text, "archived") {
			t.Errorf("snip %+v: want from the second turn (message 4)", c)
		}
	}
	last := m.requests[len(m.requests)-1]
	if snips != 1 || last[1].Text() != "tra cứu 0" || !strings.Contains(last[5].Text(), "archived") {
		t.Errorf("%d snips; request starts %v", snips, last[:6])
	}
	if err := wellFormed(last); err != nil {
		t.Error(err)
	}
}
