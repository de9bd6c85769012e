package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
)

// bigRead answers each call with a distinct large text (size bytes).
type bigRead struct{ size int }

func (b *bigRead) Def() tools.Def {
	return tools.Def{Name: "read", Description: "reads a file", Params: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
}

func (b *bigRead) Run(_ context.Context, _ tools.Env, args json.RawMessage) (tools.Result, error) {
	return tools.Result{Output: bigOutput(args, b.size)}, nil
}

func bigOutput(args json.RawMessage, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "file %s\n", args)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "line %d of %s: dữ liệu của tệp, some numbers %d %d\n", i, args, i*7, i*13)
	}
	return b.String()[:size]
}

// windowHarness is a harness whose one route, ollama:small, is the window
// server through the real OpenAI-compatible client.
func windowHarness(t *testing.T, window, maxOut, readSize int, reply func(windowRequest) windowReply) (*harness, *windowServer) {
	t.Helper()
	read := &bigRead{size: readSize}
	h := newHarness(t, nil, read)
	s := newWindowServer(t, window, reply)
	cat := llm.NewCatalog(map[string]llm.ModelOverride{"ollama:small": {ContextWindow: &window, MaxOutputTokens: &maxOut}})
	h.spec = cat.Lookup
	h.deps.Models = windowModels(s, cat)
	h.agent.Routes = []string{"ollama:small"}
	h.agent.Tools = append(h.agent.Tools, "tool_output_read")
	reg, err := tools.New(append(loop.Tools(), read, builtin("tool_output_read"))...)
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Tools = reg
	return h, s
}

// R-LOOP-7: a 60-step run of large reads on a 4,000-token window never
// gets "context length exceeded": older previews become one-line stubs,
// the run's own older steps are summarised, and the newest results stay.
func TestCompactionLongRunNeverOverflowsTheWindow(t *testing.T) {
	const steps = 60
	reads := 0
	h, s := windowHarness(t, 4000, 800, 6000, func(req windowRequest) windowReply {
		if isSummaryRequest(req) {
			return windowReply{Text: "I read the files one by one; each held numbered lines of data."}
		}
		if reads < steps {
			reads++
			return windowReply{Tool: "read", Args: fmt.Sprintf(`{"n":%d}`, reads)}
		}
		return windowReply{Text: fmt.Sprintf("Read all %d files.", steps)}
	})
	h.agent.MaxSteps = steps + 5
	h.send("đọc hết 60 tệp")
	h.turn()
	evs := h.events()
	if n := s.tooLong(); n != 0 {
		t.Errorf("%d requests were over the window", n)
	}
	if f := lastFinish(t, evs); f.Status != events.RunDone {
		t.Fatalf("run %+v", f)
	}
	if n := len(eventsOf[*events.ToolCompleted](evs)); n != steps {
		t.Errorf("%d reads ran, want %d", n, steps)
	}
	stages := map[string]int{}
	for _, c := range eventsOf[*events.ContextCompacted](evs) {
		stages[c.Stage]++
		if c.After > c.Before && c.Stage != events.CompactBudget {
			t.Errorf("%s compaction grew the request: %d → %d", c.Stage, c.Before, c.After)
		}
	}
	if stages[events.CompactMicro] == 0 || stages[events.CompactRunSummary] == 0 {
		t.Errorf("stages %v: want micro and run_summary", stages)
	}
	var sizes []int
	for _, req := range s.requests() {
		if !isSummaryRequest(req) {
			sizes = append(sizes, req.Tokens)
		}
	}
	t.Logf("stages %v; tokens sent per step: %v", stages, sizes)
	// What the same steps would send whole (no compaction): the first
	// request's fixed part plus the history up to each step.
	var whole []int
	var hist []llm.Message
	fixed := sizes[0] - llm.EstimateTokens([]llm.Message{llm.Text(llm.RoleUser, "đọc hết 60 tệp")}, nil)
	for _, m := range h.state().Messages {
		switch m.Role {
		case loop.RoleAssistant:
			whole = append(whole, fixed+llm.EstimateTokens(hist, nil))
			hist = append(hist, llm.Text(llm.RoleAssistant, m.Text+fmt.Sprint(m.ToolCalls)))
		case loop.RoleTool:
			hist = append(hist, llm.Text(llm.RoleTool, m.Text))
		default:
			hist = append(hist, llm.Text(llm.RoleUser, m.Text))
		}
	}
	t.Logf("tokens the same steps would send uncompacted: %v", whole)
	// The newest result is whole (as far as the budget preview lets it) in the last request.
	last := s.requests()[len(s.requests())-1]
	rs := toolResults(last)
	if len(rs) == 0 || !strings.Contains(rs[len(rs)-1].Content, fmt.Sprintf(`file {"n":%d}`, steps)) {
		t.Errorf("last request does not hold the newest read")
	}
}

// R-LOOP-7: over a 40-turn conversation on a 24,000-token route, every
// request holds its three newest tool results whole.
func TestCompactionFortyTurnsKeepNewestThreeResultsWhole(t *testing.T) {
	const turns = 40
	h, s := windowHarness(t, 24000, 4096, 9000, func(req windowRequest) windowReply {
		if isSummaryRequest(req) {
			return windowReply{Text: "The owner had files read one by one; each was summarised to them."}
		}
		role, text := lastOf(req)
		if role == llm.RoleTool {
			return windowReply{Text: "Đã đọc xong."}
		}
		n := strings.TrimPrefix(text, "đọc tệp ")
		return windowReply{Tool: "read", Args: fmt.Sprintf(`{"n":%s}`, n)}
	})
	for i := range turns {
		h.send(fmt.Sprintf("đọc tệp %d", i+1))
		h.turn()
	}
	if n := s.tooLong(); n != 0 {
		t.Errorf("%d requests were over the window", n)
	}
	evs := h.events()
	args := map[string]json.RawMessage{}
	for _, c := range eventsOf[*events.ToolCalled](evs) {
		args[c.CallID] = c.Arguments
	}
	checked := 0
	for _, req := range s.requests() {
		if isSummaryRequest(req) {
			continue
		}
		rs := toolResults(req)
		for _, r := range rs[max(len(rs)-3, 0):] {
			if want := bigOutput(args[r.ToolCallID], 9000); r.Content != want {
				t.Fatalf("request %d: result %s not whole (%d of %d bytes)", req.N, r.ToolCallID, len(r.Content), len(want))
			}
		}
		checked++
	}
	stages := map[string]int{}
	for _, c := range eventsOf[*events.ContextCompacted](evs) {
		stages[c.Stage]++
	}
	t.Logf("%d requests checked; stages %v", checked, stages)
	if stages[events.CompactMicro] == 0 {
		t.Errorf("stages %v: the conversation never needed compaction", stages)
	}
	if f := lastFinish(t, evs); f.Status != events.RunDone {
		t.Errorf("last run %+v", f)
	}
}

// R-LOOP-7: "context too long" from the provider, though the estimate
// fit, compacts one stage further and retries, at most twice a step; a
// third answer fails the step.
func TestRecoveryForcedTooLongCompactsAndRetries(t *testing.T) {
	h, s := windowHarness(t, 24000, 2000, 9000, func(req windowRequest) windowReply {
		if isSummaryRequest(req) {
			return windowReply{Text: "Earlier files were read."}
		}
		role, text := lastOf(req)
		if role == llm.RoleTool {
			return windowReply{Text: "xong"}
		}
		return windowReply{Tool: "read", Args: fmt.Sprintf(`{"n":%d}`, len(text))}
	})
	for i := range 5 {
		h.send(fmt.Sprintf("đọc tệp số %d", i))
		h.turn()
	}
	before := len(h.events())
	s.force(2)
	h.send("thêm một tệp")
	h.turn()
	evs := h.events()[before:]
	var kinds []string
	limits := []int{}
	for _, e := range evs {
		switch e := e.(type) {
		case *events.ModelRetried:
			kinds = append(kinds, "retry:"+e.Reason)
		case *events.ContextCompacted:
			kinds = append(kinds, "compact:"+e.Stage)
			limits = append(limits, e.Limit)
		}
	}
	t.Logf("after the forced answers: %v, limits %v", kinds, limits)
	rs := eventsOf[*events.ModelRetried](evs)
	if len(rs) != 2 || rs[0].Reason != events.RetryTooLong || rs[1].Reason != events.RetryTooLong || rs[1].Attempt != 2 {
		t.Fatalf("retries %+v, want two too_long", rs)
	}
	// Each retry compacted (a context_compacted after each), each time below the last.
	after := 0
	seen := false
	for _, e := range evs {
		switch e.(type) {
		case *events.ModelRetried:
			seen = true
		case *events.ContextCompacted:
			if seen {
				after++
				seen = false
			}
		}
	}
	if after != 2 {
		t.Errorf("compactions after the retries: %v", kinds)
	}
	if f := lastFinish(t, evs); f.Status != events.RunDone {
		t.Errorf("run %+v", f)
	}
	// Three answers in a row: the step fails after two tries.
	before = len(h.events())
	s.force(3)
	h.send("một tệp nữa")
	h.turn()
	evs = h.events()[before:]
	if rs := eventsOf[*events.ModelRetried](evs); len(rs) != 2 {
		t.Errorf("%d retries on three too-long answers, want 2", len(rs))
	}
	if f := lastFinish(t, evs); f.Status != events.RunFailed || f.Reason != "model_error" {
		t.Errorf("run %+v, want failed model_error", f)
	}
}

// Seed 004 compact: the model asks for compaction; the history before the
// open step is summarised (earlier turns and the run's earlier steps),
// recorded with the call's id, the result says how many tokens it freed,
// and the next request reads the summaries.
func TestCompactToolSummarisesHistoryBeforeTheStep(t *testing.T) {
	calls := 0
	h, s := windowHarness(t, 64000, 2000, 3000, func(req windowRequest) windowReply {
		if isSummaryRequest(req) {
			return windowReply{Text: "Tóm tắt: files were read."}
		}
		role, text := lastOf(req)
		// Tool results since the owner's last message.
		since := 0
		for i := len(req.Msgs) - 1; i >= 0 && req.Msgs[i].Role != llm.RoleUser; i-- {
			if req.Msgs[i].Role == llm.RoleTool {
				since++
			}
		}
		owner := ""
		for _, m := range req.Msgs {
			if m.Role == llm.RoleUser {
				owner = m.Text()
			}
		}
		switch {
		case role == llm.RoleTool && strings.HasPrefix(text, "Compacted"):
			return windowReply{Text: "đã gọn"}
		case strings.Contains(owner, "gọn lại") && since == 2:
			return windowReply{Tool: "compact", Args: `{}`}
		case strings.Contains(owner, "gọn lại") || role != llm.RoleTool:
			calls++
			return windowReply{Tool: "read", Args: fmt.Sprintf(`{"n":%d}`, calls)}
		}
		return windowReply{Text: "xong"}
	})
	h.agent.Tools = append(h.agent.Tools, "compact")
	for i := range 4 {
		h.send(fmt.Sprintf("đọc %d", i))
		h.turn()
	}
	h.send("đọc thêm rồi gọn lại") // two reads, then compact
	h.turn()
	evs := h.events()
	var res *events.ToolCompleted
	for _, c := range eventsOf[*events.ToolCompleted](evs) {
		if c.Tool == "compact" {
			res = c
		}
	}
	if res == nil || !strings.HasPrefix(res.Output, "Compacted") || !strings.Contains(res.Output, "tokens freed") {
		t.Fatalf("compact result %+v", res)
	}
	var cs []*events.ContextCompacted
	for _, c := range eventsOf[*events.ContextCompacted](evs) {
		if c.CallID == res.CallID {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 || cs[len(cs)-1].After >= cs[0].Before {
		t.Fatalf("compactions of the call: %+v", cs)
	}
	// The request after the call reads the summary, not the earlier reads.
	reqs := s.requests()
	last := reqs[len(reqs)-1]
	if got := toolResults(last); len(got) != 1 || !strings.HasPrefix(got[0].Content, "Compacted") {
		t.Errorf("the request after compact holds %d tool results, want only compact's", len(got))
	}
	t.Logf("%s", res.Output)
	if f := lastFinish(t, evs); f.Status != events.RunDone {
		t.Errorf("run %+v", f)
	}
}
