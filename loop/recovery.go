package loop

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
)

// Recovery of one step's model call on one route (R-LOOP-7, seed 004
// "Compaction and Recovery"). Each retry is a model_retried event before
// the call is made again, so the run card shows it and replay makes the
// same one:
//
//   - 429: wait the provider's Retry-After (up to a minute; longer: next
//     route) or an exponential backoff with full jitter, up to
//     llm.MaxRateLimitRetries times;
//   - 5xx, 529 overloaded, a broken stream: up to maxOverloadRetries more
//     attempts after about 0.5, 1 and 2 s (±25%), then the next route
//     (route_fallback);
//   - a reply that stopped at max_tokens: once more with the limit doubled
//     when that still fits the window, then "continue exactly where you
//     stopped" up to maxContinuations times, the parts joined into one
//     reply;
//   - prompt too long: compact further (the limit at three quarters of
//     what was sent) and try again, at most maxTooLong times.
//
// A reply that failed after its text streamed keeps that text on the
// retry event (or the fallback, or the failed call) marked interrupted:
// the owner saw it, so it is never re-asked silently. A streamed tool-call
// draft counts as shown, like text, so such a step does not escalate
// (R-LOOP-4(b)).
const (
	maxOverloadRetries = 3
	overloadBase       = 500 * time.Millisecond
	maxContinuations   = 3
	maxTooLong         = 2
	// maxRetryAfter: a provider asking for a longer wait is down for now.
	maxRetryAfter = time.Minute
)

// continuePrompt asks for the rest of a reply cut at the length limit.
const continuePrompt = "Your reply was cut off at the length limit. Continue exactly where you stopped, without repeating anything and without a preamble."

// OverloadBackoff is the wait before retry number attempt (0 first) of an
// unavailable provider: 0.5 s · 2^attempt, ±25%.
func OverloadBackoff(attempt int, rnd *rand.Rand) time.Duration {
	d := overloadBase << min(max(attempt, 0), 8)
	f := rand.Float64
	if rnd != nil {
		f = rnd.Float64
	}
	return time.Duration(float64(d) * (0.75 + 0.5*f()))
}

// stepCall is one step's model call across its routes.
type stepCall struct {
	t       *Turn
	s       snapshotOf
	step    int
	system  string
	record  string // system, when the step's model_called records it
	purpose string
	defs    []llm.Tool
	// defsBytes is llm.ToolsBytes(defs), measured once.
	defsBytes int
	// payer is whom the step's calls are charged to.
	payer llm.Payer
	// shown: text or a tool-call draft of this step reached the owner.
	shown bool
	// cutText is what the last failed attempt had streamed.
	cutText string
	// tooLong counts the step's "prompt too long" answers: each compacts
	// further and retries, at most maxTooLong times.
	tooLong int
}

// onRoute tries route until it answers or gives up. mc is the recorded
// reply; routeErr why the route gave up; err a harness failure.
func (c *stepCall) onRoute(ctx context.Context, route string) (mc *events.ModelCalled, routeErr error, err error) {
	t := c.t
	c.cutText = ""
	model, merr := t.deps.Models.Model(route)
	if merr != nil {
		return nil, merr, nil
	}
	spec := t.spec(route)
	maxTok := spec.MaxOutputTokens
	var rate, down int
	doubled := false
	var parts []string // replies cut at the limit, joined ahead of the last
	for {
		msgs, err := c.history(ctx, route)
		if err != nil {
			return nil, nil, err
		}
		if len(parts) > 0 {
			msgs = append(msgs, llm.Text(llm.RoleAssistant, strings.Join(parts, "")), llm.Text(llm.RoleUser, continuePrompt))
		}
		var streamed strings.Builder
		streams := newLiveStreams(t.secrets(), func(d llm.Delta) {
			if t.deps.Live != nil {
				t.deps.Live(t.conv.ID(), c.s.openRun, d)
			}
		})
		est := llm.EstimateWith(msgs, c.defsBytes)
		req := llm.Request{Messages: msgs, Tools: c.defs, Route: route, Purpose: c.purpose, Payer: c.payer,
			MaxTokens: maxTok, CacheBreakpoint: cacheBreakpoint(msgs), Estimate: est,
			OnDelta: func(d llm.Delta) {
				if d.Text != "" || d.ToolName != "" || d.ArgumentsDelta != "" {
					c.shown = true
				}
				streamed.WriteString(d.Text)
				streams.send(d)
			}}
		start := t.deps.Clock.Now()
		rep, cerr := model.Call(ctx, req)
		streams.flush()
		if cerr == nil {
			if rep.Cut() {
				cut := modelCalled(c.s.openRun, c.step, route, rep, 0)
				r := &events.ModelRetried{RunID: c.s.openRun, Step: c.step, Route: route, Text: rep.Text,
					InputTokens: cut.InputTokens, OutputTokens: cut.OutputTokens, CostUSD: cut.CostUSD}
				switch {
				case !doubled && 2*maxTok+llm.Calibrate(est, c.s.ratio[route]) <= spec.ContextWindow:
					doubled, maxTok = true, 2*maxTok
					r.Reason, r.Attempt, r.MaxTokens = events.RetryLength, 1, maxTok
				case len(parts) < maxContinuations:
					parts = append(parts, rep.Text)
					r.Reason, r.Attempt, r.MaxTokens = events.RetryContinue, len(parts), maxTok
				default:
					r = nil // out of continuations: the joined reply is what there is
				}
				if r != nil {
					if err := t.emit(ctx, r); err != nil {
						return nil, nil, err
					}
					continue
				}
			}
			mc := modelCalled(c.s.openRun, c.step, route, rep, t.deps.Clock.Now().Sub(start))
			mc.Purpose = c.purpose
			mc.EstimatedTokens = est
			mc.Text = strings.Join(parts, "") + mc.Text
			uniqueCallIDs(mc.ToolCalls, c.s.messages, c.step)
			mc.System = c.record
			// Durable with what follows: the calls' start, a refusal's
			// next reservation, or the run's end.
			if err := t.emitDeferred(ctx, mc); err != nil {
				return nil, nil, err
			}
			t.sentSystem = c.system
			return mc, nil, nil
		}
		if stopped(ctx) {
			// The owner's stop cancelled the request: what was shown stays,
			// marked stopped; the model is not asked again.
			mc := &events.ModelCalled{RunID: c.s.openRun, Step: c.step, Purpose: c.purpose, Route: route, Model: modelOf(route),
				Text: strings.Join(parts, "") + streamed.String(), Error: ErrStopped.Error(), Stopped: true, System: c.record,
				LatencyMS: t.deps.Clock.Now().Sub(start).Milliseconds()}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			err := t.emit(rctx, mc)
			cancel()
			if err != nil {
				return nil, nil, err
			}
			return nil, nil, ctx.Err()
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if _, ok := errors.AsType[*budget.StoreError](cerr); ok {
			// The ledger could not store the call's reservation, so the
			// call never left: the store failed, not the route. The pass
			// fails and the worker runs it again, as for any store error.
			return nil, nil, cerr
		}
		c.cutText = streamed.String()
		r := &events.ModelRetried{RunID: c.s.openRun, Step: c.step, Route: route, Error: oneLine(cerr),
			Text: c.cutText, Interrupted: c.cutText != "", MaxTokens: maxTok}
		var wait time.Duration
		switch {
		case errors.Is(cerr, llm.ErrRateLimited) && rate < llm.MaxRateLimitRetries:
			after, ok := llm.RetryAfter(cerr)
			if ok && after > maxRetryAfter {
				return nil, cerr, nil
			}
			wait = after
			if !ok {
				wait = llm.Backoff(rate, nil)
			}
			rate++
			r.Reason, r.Attempt = events.RetryRateLimited, rate
		case errors.Is(cerr, llm.ErrUnavailable) && down < maxOverloadRetries:
			wait = OverloadBackoff(down, nil)
			down++
			r.Reason, r.Attempt = events.RetryUnavailable, down
		case errors.Is(cerr, llm.ErrContextTooLong) && c.tooLong < maxTooLong && c.canCompact():
			c.tooLong++
			r.Reason, r.Attempt = events.RetryTooLong, c.tooLong
		default:
			return nil, cerr, nil
		}
		r.WaitMS = wait.Milliseconds()
		if r.MaxTokens == spec.MaxOutputTokens {
			r.MaxTokens = 0 // only said when it changed
		}
		if err := t.emit(ctx, r); err != nil {
			return nil, nil, err
		}
		if r.Reason == events.RetryTooLong {
			if err := c.compactNow(ctx, route, c.tooLong); err != nil {
				return nil, nil, err
			}
		}
		if err := t.sleep(ctx, wait); err != nil {
			return nil, nil, err
		}
		c.cutText = ""
	}
}

// cacheBreakpoint is the index in msgs of the last message of the
// previous step — the last one before the step's new owner or harness
// messages at the end — where the provider's prompt cache may end the
// prefix it keeps (the system prompt is the other breakpoint). 0: none.
func cacheBreakpoint(msgs []llm.Message) int {
	for i := len(msgs) - 1; i > 0; i-- {
		if msgs[i].Role != llm.RoleUser {
			return i
		}
	}
	return 0
}

// sleep waits d unless ctx ends (the Clock's: instant in tests).
func (t *Turn) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	return t.deps.Clock.Sleep(ctx, d)
}

// ShownReplies is the fold of replies that broke after their text reached
// the chat (model_retried, route_fallback or a failed model_called marked
// interrupted): the chat keeps them where they stood, marked interrupted,
// with what came next; the model never reads them.
type ShownReplies struct {
	Shown []ShownText `json:"shown,omitempty"`
}

func (f *ShownReplies) apply(env events.Envelope, on foldOn) {
	show := func(run, text, then string) {
		f.Shown = append(f.Shown, ShownText{At: on.messages, RunID: run, Text: text, Then: then})
	}
	switch e := decoded(env).(type) {
	case *events.ModelCalled:
		if e.InTurn() && !e.Stopped && e.Error != "" && e.Text != "" {
			show(e.RunID, e.Text, "the model call failed: "+e.Error)
		}
	case *events.ModelRetried:
		if e.Interrupted && e.Text != "" {
			then := fmt.Sprintf("retried on %s (attempt %d)", e.Route, e.Attempt)
			if e.Error != "" {
				then += " after: " + e.Error
			}
			show(e.RunID, e.Text, then)
		}
	case *events.RouteFallback:
		if e.Interrupted && e.Text != "" {
			show(e.RunID, e.Text, fmt.Sprintf("moved from %s to %s after: %s", e.From, e.To, e.Error))
		}
	}
}
