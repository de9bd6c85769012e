package loop_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
)

// Every request sends max_tokens = the route's max_output_tokens
// (config.yaml models:), 4096 when nothing is known.
func TestRecoveryEveryRequestSendsRouteMaxOutputTokens(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {fail(503), fail(503), fail(503), fail(503)}, "fake:b": {say("ok")}})
	out := 777
	cat := llm.NewCatalog(map[string]llm.ModelOverride{"fake:b": {MaxOutputTokens: &out}})
	h.spec = cat.Lookup
	h.send("hi")
	h.turn()
	if got := h.models["fake:a"].maxTok; len(got) == 0 || got[0] != llm.DefaultMaxOutputTokens {
		t.Errorf("fake:a max_tokens %v, want %d", got, llm.DefaultMaxOutputTokens)
	}
	if got := h.models["fake:b"].maxTok; !slices.Equal(got, []int{777}) {
		t.Errorf("fake:b max_tokens %v, want [777]", got)
	}
}

// recorder wraps a scripted model and keeps what each call was sent.
type recorder struct {
	llm.Model
	mu   sync.Mutex
	msgs [][]llm.Message
	max  []int
}

func (r *recorder) Call(ctx context.Context, req llm.Request) (llm.Reply, error) {
	r.mu.Lock()
	r.msgs, r.max = append(r.msgs, req.Messages), append(r.max, req.MaxTokens)
	r.mu.Unlock()
	return r.Model.Call(ctx, req)
}

// scripted puts fake:script models (YAML per route, in route order) behind
// the harness and records the waits the turn asks for.
func scripted(t *testing.T, h *harness, routes [][2]string) (map[string]*recorder, *[]time.Duration) {
	t.Helper()
	models := map[string]*recorder{}
	h.agent.Routes = nil
	for _, r := range routes {
		m, err := llm.ParseScript(r[0]+".yaml", []byte(r[1]))
		if err != nil {
			t.Fatal(err)
		}
		models[r[0]] = &recorder{Model: m}
		h.agent.Routes = append(h.agent.Routes, r[0])
	}
	h.deps.Models = llm.ModelsFunc(func(route string) (llm.Model, error) {
		if m, ok := models[route]; ok {
			return m, nil
		}
		return nil, fmt.Errorf("no route %s", route)
	})
	var waits []time.Duration
	h.deps.Clock = clockAt{now: func() time.Time { return h.now }, slept: func(d time.Duration) { waits = append(waits, d) }}
	return models, &waits
}

// R-LOOP-7: a 429 waits the provider's Retry-After, on the same route, and
// says so on the run card.
func TestRecoveryRateLimitHonoursRetryAfter(t *testing.T) {
	h := newHarness(t, nil)
	models, waits := scripted(t, h, [][2]string{{"fake:a", "- error: 429\n  retry_after: 7s\n- error: 429\n- text: ok\n"}})
	h.send("hi")
	h.turn()
	evs := h.events()
	rs := eventsOf[*events.ModelRetried](evs)
	if len(rs) != 2 || rs[0].Reason != events.RetryRateLimited || rs[0].WaitMS != 7000 || rs[1].Attempt != 2 || rs[0].Route != "fake:a" {
		t.Fatalf("retries %+v", rs)
	}
	if len(*waits) != 2 || (*waits)[0] != 7*time.Second || (*waits)[1] <= 0 || (*waits)[1] >= time.Second {
		t.Errorf("waits %v: want Retry-After 7s, then a jittered backoff under 1s", *waits)
	}
	if f := lastFinish(t, evs); f.Status != events.RunDone || len(models["fake:a"].msgs) != 3 {
		t.Errorf("finish %+v after %d calls", f, len(models["fake:a"].msgs))
	}
	if len(eventsOf[*events.RouteFallback](evs)) != 0 {
		t.Errorf("a rate limit moved to another route")
	}
}

// R-LOOP-7: 5xx/529 are retried three times with backoff of about 0.5, 1
// and 2 s, then the next route takes over with route_fallback.
func TestRecoveryOverloadBacksOffThenNextRoute(t *testing.T) {
	h := newHarness(t, nil)
	_, waits := scripted(t, h, [][2]string{
		{"fake:a", "- error: 529\n- error: 503\n- error: 529\n- error: 529\n"},
		{"fake:b", "- text: from b\n"},
	})
	h.send("hi")
	h.turn()
	evs := h.events()
	rs := eventsOf[*events.ModelRetried](evs)
	if len(rs) != 3 {
		t.Fatalf("%d retries, want 3: %+v", len(rs), rs)
	}
	for i, base := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		w := (*waits)[i]
		if rs[i].Reason != events.RetryUnavailable || w < base*3/4 || w > base*5/4 {
			t.Errorf("retry %d: %+v wait %v, want about %v", i+1, rs[i], w, base)
		}
	}
	fb := eventsOf[*events.RouteFallback](evs)
	if len(fb) != 1 || fb[0].From != "fake:a" || fb[0].To != "fake:b" {
		t.Errorf("fallback %+v", fb)
	}
	calls := eventsOf[*events.ModelCalled](evs)
	if last := calls[len(calls)-1]; last.Route != "fake:b" || last.Text != "from b" {
		t.Errorf("answered by %+v", last)
	}
	// The export (audit trail) holds each retry and the fallback, and
	// verifies; an edited retry does not.
	if got := exported(t, h, events.TypeModelRetried); got[events.TypeModelRetried] != 3 || got[events.TypeRouteFallback] != 1 {
		t.Errorf("export holds %d model_retried and %d route_fallback, want 3 and 1", got[events.TypeModelRetried], got[events.TypeRouteFallback])
	}
	// 529 twice, then the same route answers: no fallback.
	h2 := newHarness(t, nil)
	scripted(t, h2, [][2]string{{"fake:a", "- error: 529\n- error: 529\n- text: third time\n"}, {"fake:b", "- text: b\n"}})
	h2.send("hi")
	h2.turn()
	if evs := h2.events(); len(eventsOf[*events.RouteFallback](evs)) != 0 || len(eventsOf[*events.ModelRetried](evs)) != 2 {
		t.Errorf("two overloads then an answer: %d fallbacks, %d retries", len(eventsOf[*events.RouteFallback](evs)), len(eventsOf[*events.ModelRetried](evs)))
	}
}

// R-LOOP-7: a reply cut at max_tokens is asked again once with the limit
// doubled, then continued; the parts are joined into one reply.
func TestRecoveryMaxTokensDoublesThenContinues(t *testing.T) {
	h := newHarness(t, nil)
	models, _ := scripted(t, h, [][2]string{{"fake:a", "- text: 'Xin chào, đây là '\n  finish: length\n  usage: {input: 10, output: 4096, cost_usd: 0.01}\n" +
		"- text: 'Xin chào, đây là phần một'\n  finish: length\n  usage: {input: 10, output: 8192, cost_usd: 0.02}\n" +
		"- text: ' và phần hai.'\n  usage: {input: 20, output: 5, cost_usd: 0.001}\n"}})
	h.send("viết dài")
	h.turn()
	evs := h.events()
	rs := eventsOf[*events.ModelRetried](evs)
	if len(rs) != 2 || rs[0].Reason != events.RetryLength || rs[0].MaxTokens != 8192 || rs[1].Reason != events.RetryContinue || rs[0].Text != "Xin chào, đây là " {
		t.Fatalf("retries %+v", rs)
	}
	rec := models["fake:a"]
	if rec.max[0] != 4096 || rec.max[1] != 8192 || rec.max[2] != 8192 {
		t.Errorf("max_tokens %v, want 4096, 8192, 8192", rec.max)
	}
	last := rec.msgs[2]
	if n := len(last); n < 2 || !strings.Contains(last[n-1].Text(), "Continue exactly where you stopped") ||
		last[n-2].Text() != "Xin chào, đây là phần một" {
		t.Errorf("continuation request ends %+v", last[len(last)-2:])
	}
	calls := eventsOf[*events.ModelCalled](evs)
	if len(calls) != 1 || calls[0].Text != "Xin chào, đây là phần một và phần hai." {
		t.Fatalf("reply %+v", calls)
	}
	if st := h.state(); st.CostUSD < 0.0309 || st.CostUSD > 0.0311 {
		t.Errorf("cost %v: the cut replies cost too", st.CostUSD)
	}
}

// R-LOOP-7: a prompt too long is compacted and tried once more; a second
// refusal moves on.
func TestRecoveryPromptTooLongCompactsAndRetriesOnce(t *testing.T) {
	tool := &counter{name: "look", out: strings.Repeat("dữ liệu dài ", 400)}
	h := newHarness(t, nil, tool)
	scripted(t, h, [][2]string{{"fake:a", "- tool_calls: [{name: look}]\n- tool_calls: [{name: look, arguments: {n: 2}}]\n- tool_calls: [{name: look, arguments: {n: 3}}]\n" +
		"- tool_calls: [{name: look, arguments: {n: 4}}]\n- text: ok\n- error: context_too_long\n- text: after compaction\n"}})
	h.send("look a lot")
	h.turn()
	h.send("again")
	h.turn()
	evs := h.events()
	rs := eventsOf[*events.ModelRetried](evs)
	if len(rs) != 1 || rs[0].Reason != events.RetryTooLong {
		t.Fatalf("retries %+v", rs)
	}
	cs := eventsOf[*events.ContextCompacted](evs)
	if len(cs) == 0 {
		t.Fatal("no compaction after context_too_long")
	}
	if f := lastFinish(t, evs); f.Status != events.RunDone {
		t.Errorf("finish %+v", f)
	}
}

// R-LOOP-7: text shown before a failure is kept, marked interrupted, and
// the retry is visible; R-LOOP-4(b): a streamed tool-call draft counts as
// shown, so the step does not escalate.
func TestRecoveryShownTextKeptInterrupted(t *testing.T) {
	h := newHarness(t, nil)
	scripted(t, h, [][2]string{
		{"fake:a", "- text: 'Tôi đang viết'\n  error: 503\n- error: 503\n- error: 503\n- error: 503\n"},
		{"fake:b", "- text: done\n"},
	})
	h.send("hi")
	h.turn()
	evs := h.events()
	rs := eventsOf[*events.ModelRetried](evs)
	if len(rs) == 0 || !rs[0].Interrupted || rs[0].Text != "Tôi đang viết" {
		t.Fatalf("first retry %+v, want the shown text kept as interrupted", rs)
	}
	// The chat keeps it where it stood (before the reply), the model never reads it.
	st := h.state()
	if len(st.Shown) != 1 || st.Shown[0].Text != "Tôi đang viết" || st.Shown[0].At != 1 || !strings.HasPrefix(st.Shown[0].Then, "retried on fake:a") {
		t.Errorf("shown %+v", st.Shown)
	}
	for _, m := range st.Messages {
		if m.Text == "Tôi đang viết" {
			t.Errorf("the interrupted text is in the model's history")
		}
	}
	h2 := newHarness(t, nil)
	scripted(t, h2, [][2]string{{"fake:a", "- tool_calls: [{name: workspace_write, arguments: {path: a}}]\n  error: 400\n"}})
	h2.agent.EscalationRoute = "fake:escalate"
	h2.send("hi")
	h2.turn()
	evs = h2.events()
	if len(eventsOf[*events.Escalated](evs)) != 0 {
		t.Errorf("escalated after a tool-call draft was shown")
	}
	if f := lastFinish(t, evs); f.Status != events.RunFailed {
		t.Errorf("finish %+v", f)
	}
}
