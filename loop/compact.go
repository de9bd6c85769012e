package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
	crewimage "github.com/my-agent-crew/crew/tools/image"
)

// Compaction (R-LOOP-7, seed 004): before every model call the request is
// measured (llm.EstimateTokens of the messages, the images and the tool
// declarations, scaled by what the provider last reported for the route)
// and kept under the route's prompt limit, context_window −
// max_output_tokens. The stages run in this order, each recorded as a
// context_compacted event with the tokens before and after it, which the
// state folds (so a snapshot plus its tail, a cold replay and an export
// all see the same history):
//
//  1. budget: a single tool result over a quarter of the limit is shown as
//     a preview and a pointer (every call; the full text is in the spill
//     folder, and the log keeps it);
//  2. snip: with more than snipMaxTurns turns before the open run (however
//     few tokens), the turns between the first one and the newest
//     snipKeepTurns are archived behind one note (the log keeps them);
//  3. micro: over the limit, older results the model has read — previews
//     included — become a one-line stub (tool_output_read brings them
//     back), oldest first, until the estimate is at 80% of the limit;
//  4. run_summary: still over, the model summarises the open run's own
//     older steps (a model_called with purpose compaction); the summary
//     reads as the assistant's note of what it did;
//  5. summary: still over, the model summarises the oldest turns before
//     the open run, down to half the room the history has;
//  6. cut: still over, the largest of what is kept whole — the newest
//     microKeep tool results and the newest owner message — is cut with a
//     marker (a result's rest through tool_output_read), and the run goes
//     on.
//
// Stages 3 to 5 never touch the newest microKeep results nor the open
// run's owner message, and no summary goes past the newest turn because
// the declarations are large: they count, but the history keeps its
// newest turn and step. Nothing but the budget happens while the request
// fits, and each compaction goes well below the limit, so the prefix the
// provider caches stays the same from one compaction to the next. Cuts
// fall on a turn's first message or a step's reply, so a tool call never
// loses its result. A provider's "context too long" compacts again with
// the limit at three quarters of the request, at most twice a step
// (recovery.go).

// Compaction is what the model reads instead of parts of State.Messages.
type Compaction struct {
	// Cuts show Messages[From:To] as one user message; sorted, disjoint.
	Cuts []Cut `json:"cuts,omitempty"`
	// Results replace a tool result's text, by call id.
	Results map[string]string `json:"results,omitempty"`
}

// Cut is a range of messages shown as one note or summary.
type Cut struct {
	From  int    `json:"from"`
	To    int    `json:"to"`
	Text  string `json:"text"`
	Stage string `json:"stage"`
}

const (
	microKeep = 3
	// snip: more than snipMaxTurns turns before the open run keep the first
	// and the newest snipKeepTurns (so it runs once per 100 turns).
	snipMaxTurns  = 200
	snipKeepTurns = 100
	// budgetShare: a result over limit/budgetShare is cut to a preview.
	budgetShare  = 4
	previewChars = 1500
	// summaryChars bounds the summary the model is asked for.
	summaryWords = 400
)

// apply folds one context_compacted into c.
func (c *Compaction) apply(e *events.ContextCompacted) {
	if len(e.Results) > 0 {
		if c.Results == nil {
			c.Results = map[string]string{}
		}
		for _, r := range e.Results {
			c.Results[r.CallID] = r.Text
		}
	}
	switch e.Stage {
	case events.CompactSnip, events.CompactSummary, events.CompactRunSummary, events.CompactCut:
		if e.To <= e.From {
			return
		}
		kept := c.Cuts[:0]
		for _, cut := range c.Cuts {
			if cut.To <= e.From || cut.From >= e.To {
				kept = append(kept, cut)
			}
		}
		c.Cuts = append(kept, Cut{From: e.From, To: e.To, Text: e.Text, Stage: e.Stage})
		sort.Slice(c.Cuts, func(i, j int) bool { return c.Cuts[i].From < c.Cuts[j].From })
	}
}

func (c Compaction) clone() Compaction {
	out := Compaction{Cuts: append([]Cut(nil), c.Cuts...)}
	if c.Results != nil {
		out.Results = make(map[string]string, len(c.Results))
		for k, v := range c.Results {
			out.Results[k] = v
		}
	}
	return out
}

// viewed is one message of what the model reads, with where it came from.
type viewed struct {
	Message
	at  int  // index in the history of the message, or of a cut's first
	cut bool // a cut's note or summary
}

// summaryLine opens an older-turn summary (stage summary).
const summaryLine = "[Summary of the earlier part of this conversation, written to keep it within the model's context; the log keeps every message.]"

// modelView is the history as the model reads it.
func modelView(msgs []Message, c Compaction) []viewed {
	out := make([]viewed, 0, len(msgs))
	ci := 0
	for i := 0; i < len(msgs); i++ {
		if ci < len(c.Cuts) && c.Cuts[ci].From == i {
			cut := c.Cuts[ci]
			role := RoleUser
			if cut.Stage == events.CompactRunSummary {
				role = RoleAssistant // the assistant's note of its own steps
			}
			text := cut.Text
			if body, ok := strings.CutPrefix(text, summaryLine+"\n"); ok && role == RoleUser {
				// A model wrote it, from what tools read too: in the user
				// role it is sealed, never the owner's words (R-SEC-1).
				text = summaryLine + "\n" + fence.Seal("summary of earlier messages", Unframe(body))
			}
			out = append(out, viewed{Message: Message{Role: role, Text: text}, at: i, cut: true})
			i = cut.To - 1
			ci++
			continue
		}
		m := msgs[i]
		if m.Role == RoleTool {
			if text, ok := c.Results[m.ToolCallID]; ok {
				m.Text = text
			}
		}
		out = append(out, viewed{Message: m, at: i})
	}
	return out
}

func messagesOf(v []viewed) []Message {
	out := make([]Message, len(v))
	for i, m := range v {
		out[i] = m.Message
	}
	return out
}

// tokensOf is the estimate for n bytes of text (llm.EstimateTokens').
func tokensOf(n int) int { return llm.TokensOfBytes(n) }

func msgTokens(m Message) int {
	n := len(m.Text) + 16
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments) + len(c.ID) + 16
	}
	return tokensOf(n)
}

// history is the request for the step on route, compacted first.
func (c *stepCall) history(ctx context.Context, route string) ([]llm.Message, error) {
	if err := c.compactNow(ctx, route, 0); err != nil {
		return nil, err
	}
	vs := c.view()
	view := messagesOf(vs)
	vision := c.t.sees(route)
	msgs := c.t.withAttachments(toLLM(c.system, view), vs, c.s.runFrom, vision)
	blind := ""
	if !vision {
		blind = c.t.blind()
	}
	return withToolImages(ctx, msgs, view, c.t.spills(), blind), nil
}

// view is the history as the model reads it: canvas notes placed, then
// compacted.
func (c *stepCall) view() []viewed {
	return modelView(canvasNoted(c.s.messages, c.s.runFrom), c.s.comp)
}

// canCompact: a forced compaction could shorten the history.
func (c *stepCall) canCompact() bool {
	return len(c.s.messages) > 1
}

// limits of route: what the prompt may hold, and what a compaction aims at.
func (c *stepCall) limits(route string) (limit, target int) {
	spec := c.t.spec(route)
	limit = spec.ContextWindow - spec.MaxOutputTokens
	return limit, limit * 8 / 10
}

// images is how many image parts the request built from vs carries on
// route (history adds them: the open run's attachments, the newest
// results' images), each counted as llm.ImageTokens.
func (c *stepCall) images(vs []viewed, route string) int {
	if !c.t.sees(route) {
		return 0
	}
	return c.imageCount(vs)
}

// imageCount is how many image parts a request built from vs carries on a
// route that can see.
func (c *stepCall) imageCount(vs []viewed) int {
	n := 0
	for _, v := range vs {
		if v.Role == RoleUser && !v.cut && v.at >= c.s.runFrom {
			for _, f := range v.Attachments {
				if crewimage.IsImage(f) {
					n++
				}
			}
		}
	}
	tool := 0
	for i := len(vs) - 1; i >= 0 && vs[i].Role != RoleAssistant; i-- {
		if vs[i].Role == RoleTool {
			tool += len(imagesOf(vs[i].Parts))
		}
	}
	return n + min(tool, maxStepImages)
}

// size is the request's measure on route: the estimate of the compacted
// view, its images and the declarations, calibrated by the ratio the
// provider last reported for the route.
func (c *stepCall) size(route string) int {
	vs := c.view()
	n := llm.EstimateWith(toLLM(c.system, messagesOf(vs)), c.defsBytes) + c.images(vs, route)*llm.ImageTokens
	return llm.Calibrate(n, c.s.ratio[route])
}

// compactNow runs the stages for route. force counts the provider's "too
// long" answers this step: its estimate was low, so the limit is three
// quarters of what was sent, and the stages run again below it.
func (c *stepCall) compactNow(ctx context.Context, route string, force int) error {
	t := c.t
	limit, target := c.limits(route)
	cur := c.size(route)
	if force > 0 {
		limit = min(limit, cur*3/4)
		target = limit * 8 / 10
	}
	stage := func(e *events.ContextCompacted) error {
		e.RunID, e.Step, e.Before, e.Limit = c.s.openRun, c.step, cur, limit
		c.s.comp.apply(e)
		e.After = c.size(route)
		cur = e.After
		return t.emit(ctx, e)
	}
	// 1. budget
	if e := c.budget(limit); e != nil {
		if err := stage(e); err != nil {
			return err
		}
	}
	// 2. snip
	if e := c.snip(); e != nil {
		if err := stage(e); err != nil {
			return err
		}
	}
	if cur <= limit {
		return nil
	}
	// 3. micro
	if e := c.micro(cur, target); e != nil {
		if err := stage(e); err != nil {
			return err
		}
	}
	// 4. the open run's older steps
	if cur > limit {
		e, err := c.runSummary(ctx, route, -1)
		if err != nil {
			return err
		}
		if e != nil {
			if err := stage(e); err != nil {
				return err
			}
		}
	}
	// 5. the older turns
	if cur > limit {
		fixed := c.fixed()
		e, err := c.summary(ctx, route, cur-fixed, max(limit-fixed, 0)/2, len(c.s.messages), true)
		if err != nil {
			return err
		}
		if e != nil {
			if err := stage(e); err != nil {
				return err
			}
		}
	}
	// 6. what is kept whole does not fit: cut the largest
	if cur > limit {
		if e := c.cut(cur, target); e != nil {
			if err := stage(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// fixed is what every request of the step holds besides the history: the
// system prompt and the declarations.
func (c *stepCall) fixed() int {
	return llm.EstimateWith([]llm.Message{llm.Text(llm.RoleSystem, c.system)}, c.defsBytes)
}

// pointer is what the model reads for a compacted result.
func pointer(m Message, chars int, preview string) string {
	if preview != "" {
		return fmt.Sprintf("%s\n[result of %s cut to this preview to save context: %d characters in all. Call tool_output_read with call_id %q and offset %d to read on.]", preview, m.Tool, chars, m.ToolCallID, len(preview))
	}
	return fmt.Sprintf("[result of %s compacted to save context (%d characters). Call tool_output_read with call_id %q to read it again.]", m.Tool, chars, m.ToolCallID)
}

// keep saves what the model read of a result where tool_output_read finds
// it, unless a cut already saved the whole output there. It reports
// whether the result may be compacted. A replay (no spill folder) writes
// nothing and decides as the run did.
func (c *stepCall) keep(m Message) (spill string, ok bool) {
	if m.Spill != "" {
		return m.Spill, true
	}
	env := c.t.toolEnv()
	if env.Spills == nil {
		return "", true
	}
	p, err := tools.Spill(c.t.secrets(), env, m.ToolCallID, m.Text)
	return p, err == nil
}

func (c *stepCall) budget(limit int) *events.ContextCompacted {
	max := limit / budgetShare
	var out []events.CompactedResult
	for _, v := range c.view() {
		m := v.Message
		if m.Role != RoleTool || v.cut || msgTokens(m) <= max {
			continue
		}
		if _, done := c.s.comp.Results[m.ToolCallID]; done {
			continue
		}
		spill, ok := c.keep(m)
		if !ok {
			continue
		}
		preview := cutAtLine(m.Text, min(previewChars, max*3/2))
		out = append(out, events.CompactedResult{CallID: m.ToolCallID, Chars: len(m.Text), Text: pointer(m, len(m.Text), preview), SpillPath: spill})
	}
	if len(out) == 0 {
		return nil
	}
	return &events.ContextCompacted{Stage: events.CompactBudget, Results: out}
}

// turnStarts are the indexes of history messages that open a turn (a user
// message right after an assistant reply without calls, or the first),
// before the open run.
func (c *stepCall) turnStarts() []int {
	end := len(c.s.messages)
	if c.s.openRun != "" {
		end = c.s.runFrom
	}
	var out []int
	for i := 0; i < end; i++ {
		if c.s.messages[i].Role == RoleUser && (i == 0 || c.s.messages[i-1].Role != RoleUser) && !c.inCut(i) {
			out = append(out, i)
		}
	}
	return append(out, end)
}

func (c *stepCall) inCut(i int) bool {
	for _, cut := range c.s.comp.Cuts {
		if i > cut.From && i < cut.To {
			return true
		}
	}
	return false
}

func (c *stepCall) snip() *events.ContextCompacted {
	starts := c.turnStarts()
	turns := len(starts) - 1
	if turns <= snipMaxTurns {
		return nil
	}
	from, to := starts[1], starts[turns-snipKeepTurns]
	n := to - from
	return &events.ContextCompacted{Stage: events.CompactSnip, From: from, To: to,
		Text: fmt.Sprintf("[%d earlier messages of this conversation were archived to keep it within the model's context. The log keeps them; nothing was lost.]", n)}
}

// kept are the view indexes of what compaction keeps whole while it
// fits alone: the newest microKeep tool results and the open run's owner
// message(s) — the user messages it opened with. keepFrom is the history
// index of the step (its reply) that holds the oldest of those results.
func (c *stepCall) kept(view []viewed) (kept []int, keepFrom int) {
	keepFrom = len(c.s.messages)
	n := 0
	for i := len(view) - 1; i >= 0 && n < microKeep; i-- {
		if view[i].Role == RoleTool && !view[i].cut {
			kept = append(kept, i)
			n++
			for j := i - 1; j >= 0; j-- {
				if view[j].Role == RoleAssistant {
					keepFrom = min(keepFrom, view[j].at)
					break
				}
			}
		}
	}
	if c.s.openRun != "" {
		for i, v := range view {
			if v.at < c.s.runFrom || v.cut {
				continue
			}
			if v.Role != RoleUser {
				break
			}
			kept = append(kept, i)
		}
	}
	return kept, keepFrom
}

// stub is the one line a compacted result becomes.
func (c *stepCall) stub(m Message) string { return pointer(m, len(m.Text), "") }

func (c *stepCall) micro(cur, target int) *events.ContextCompacted {
	view := c.view()
	kept, _ := c.kept(view)
	var out []events.CompactedResult
	for i, v := range view {
		if cur <= target {
			break
		}
		if v.Role != RoleTool || v.cut || slices.Contains(kept, i) || !readAfter(view, i) {
			continue
		}
		orig := c.s.messages[v.at]
		text := c.stub(orig)
		if len(text) >= len(v.Text) {
			continue // already a stub, or shorter than one
		}
		spill, ok := c.keep(orig)
		if !ok {
			continue
		}
		cur -= msgTokens(v.Message) - tokensOf(len(text)+16)
		out = append(out, events.CompactedResult{CallID: orig.ToolCallID, Chars: len(v.Text), Text: text, SpillPath: spill})
	}
	if len(out) == 0 {
		return nil
	}
	return &events.ContextCompacted{Stage: events.CompactMicro, Results: out}
}

// readAfter: a model reply follows view[i], so the model has read it.
func readAfter(view []viewed, i int) bool {
	for _, v := range view[i+1:] {
		if v.Role == RoleAssistant {
			return true
		}
	}
	return false
}

// runSummary has the model summarise the open run's older steps: from the
// run's first reply to the newest step start before upTo (a history
// index; -1: the step that holds the oldest result kept whole). It
// returns nil when there is nothing to summarise or the model could not.
func (c *stepCall) runSummary(ctx context.Context, route string, upTo int) (*events.ContextCompacted, error) {
	if c.s.openRun == "" {
		return nil, nil
	}
	view := c.view()
	_, keepFrom := c.kept(view)
	if upTo < 0 {
		upTo = keepFrom
	}
	from, to := -1, -1
	first := -1 // view index of from
	for i, v := range view {
		if v.at < c.s.runFrom {
			continue
		}
		step := (v.Role == RoleAssistant && !v.cut) || (v.cut && c.cutAt(v.at).Stage == events.CompactRunSummary)
		if !step {
			continue
		}
		if from < 0 {
			from, first = v.at, i
			continue
		}
		if v.at <= upTo && !v.cut {
			to = v.at
		}
	}
	if from < 0 || to <= from {
		return nil, nil
	}
	// A range that is only the summary made before frees nothing.
	if view[first].cut && first+1 < len(view) && view[first+1].at >= to {
		return nil, nil
	}
	text := transcriptOf(view, from, to)
	sum, err := c.summarise(ctx, route, fmt.Sprintf("You condense the earlier steps of a task an assistant is still working on, so it can go on without them. Write as the assistant's own notes: what it was asked, which tools it called with which arguments, what they returned that matters (facts, names, numbers, paths), what it decided and what is left to do. Write at most %d words, in the conversation's language. Answer with the notes only.", summaryWords), text)
	if err != nil || sum == "" {
		return nil, err
	}
	sum = "[My notes on the earlier steps of this task, written to keep it within the model's context; the log keeps every step, and tool_output_read brings back any result by its call id.]\n" + sum
	return &events.ContextCompacted{Stage: events.CompactRunSummary, From: from, To: to, Text: sum, Route: route}, nil
}

// cutAt is the cut starting at history index i.
func (c *stepCall) cutAt(i int) Cut {
	for _, cut := range c.s.comp.Cuts {
		if cut.From == i {
			return cut
		}
	}
	return Cut{}
}

// summary has the model summarise the oldest turns before the open run
// (and before end, a history index) so that what is left holds about goal
// tokens (history only) — with keepNewest never past the turn that holds
// the oldest result kept whole. It returns nil when there is nothing to summarise or the
// model could not.
func (c *stepCall) summary(ctx context.Context, route string, history, goal, end int, keepNewest bool) (*events.ContextCompacted, error) {
	starts := c.turnStarts()
	if len(starts) < 2 {
		return nil, nil
	}
	view := c.view()
	keepFrom := len(c.s.messages)
	if keepNewest {
		_, keepFrom = c.kept(view)
	}
	// The oldest turns, up to the first start after which the rest fits.
	to := -1
	removed := 0
	vi := 0
	for _, s := range starts[1:] {
		if s > keepFrom || s > end {
			break
		}
		for vi < len(view) && view[vi].at < s {
			removed += msgTokens(view[vi].Message)
			vi++
		}
		to = s
		if history-removed <= goal {
			break
		}
	}
	if to <= 0 {
		return nil, nil
	}
	if len(view) > 1 && view[0].cut && view[1].at >= to {
		return nil, nil // only the summary made before
	}
	text := transcriptOf(view, 0, to)
	sum, err := c.summarise(ctx, route, fmt.Sprintf("You condense the earlier part of a conversation between an owner and their assistant so the assistant can go on without it. Keep facts, names, numbers, decisions, what was done with which tools and what is still open. Write at most %d words, in the conversation's language. Answer with the summary only.", summaryWords), text)
	if err != nil || sum == "" {
		return nil, err
	}
	sum = summaryLine + "\n" + sum
	return &events.ContextCompacted{Stage: events.CompactSummary, From: 0, To: to, Text: sum, Route: route}, nil
}

// transcriptOf is the view's messages from history index from to to, as
// the summariser reads them.
func transcriptOf(view []viewed, from, to int) string {
	var b strings.Builder
	for _, v := range view {
		if v.at < from {
			continue
		}
		if v.at >= to {
			break
		}
		m := v.Message
		switch {
		case m.Role == RoleTool:
			fmt.Fprintf(&b, "[tool %s result, call %s]\n%s\n\n", m.Tool, m.ToolCallID, cutAtLine(m.Text, 2000))
		default:
			fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, m.Text)
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "(called %s %s)\n", tc.Name, cutAtLine(string(tc.Arguments), 300))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// summarise asks route's model for a summary of text (a model_called with
// purpose compaction). "" when the model could not.
func (c *stepCall) summarise(ctx context.Context, route, instruction, text string) (string, error) {
	t := c.t
	spec := t.spec(route)
	room := (spec.ContextWindow - spec.MaxOutputTokens - 500) * 3
	if len(text) > room && room > 0 {
		text = cutAtLine(text, room/3) + "\n[…]\n" + text[len(text)-room*2/3:]
	}
	model, err := t.deps.Models.Model(route)
	if err != nil {
		return "", nil
	}
	req := llm.Request{Route: route, Purpose: events.PurposeCompaction, Payer: c.payer,
		Messages:  []llm.Message{llm.Text(llm.RoleSystem, instruction), llm.Text(llm.RoleUser, text)},
		MaxTokens: min(spec.MaxOutputTokens, 2048)}
	start := t.deps.Clock.Now()
	rep, err := model.Call(ctx, req)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if _, ok := errors.AsType[*budget.StoreError](err); ok {
		return "", err // no call left: the pass fails and runs again (onRoute)
	}
	mc := modelCalled(c.s.openRun, c.step, route, rep, t.deps.Clock.Now().Sub(start))
	mc.Purpose, mc.ToolCalls = events.PurposeCompaction, nil
	if err != nil {
		mc.Error = oneLine(err)
	}
	if err := t.emit(ctx, mc); err != nil {
		return "", err
	}
	if err != nil {
		return "", nil
	}
	return strings.TrimSpace(rep.Text), nil
}

// cut is the last stage: what is kept whole did not fit alone, so the
// largest of it is cut, with a marker, until the request is at target.
func (c *stepCall) cut(cur, target int) *events.ContextCompacted {
	view := c.view()
	kept, _ := c.kept(view)
	e := &events.ContextCompacted{Stage: events.CompactCut}
	done := map[int]bool{}
	for cur > target {
		best := -1
		for _, i := range kept {
			if !done[i] && (best < 0 || msgTokens(view[i].Message) > msgTokens(view[best].Message)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		done[best] = true
		v := view[best]
		has := msgTokens(v.Message)
		keep := max(has-(cur-target), 200) * 3 // bytes
		if keep >= len(v.Text) {
			continue
		}
		orig := c.s.messages[v.at]
		if v.Role == RoleTool {
			spill, ok := c.keep(orig)
			if !ok {
				continue
			}
			text := pointer(orig, len(orig.Text), cutAtLine(orig.Text, min(keep, len(orig.Text))))
			cur -= has - tokensOf(len(text)+16)
			e.Results = append(e.Results, events.CompactedResult{CallID: orig.ToolCallID, Chars: len(v.Text), Text: text, SpillPath: spill})
			continue
		}
		if e.To > e.From {
			continue // one owner message a compaction
		}
		text := cutAtLine(v.Text, keep) + fmt.Sprintf("\n[This message was cut to fit the model's context: %d of its %d characters are shown; the log keeps it whole.]", len(cutAtLine(v.Text, keep)), len(v.Text))
		cur -= has - tokensOf(len(text)+16)
		e.From, e.To, e.Text = v.at, v.at+1, text
	}
	if len(e.Results) == 0 && e.To <= e.From {
		return nil
	}
	return e
}

// cutAtLine is s cut to at most n bytes at a line end (or a rune start).
func cutAtLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	if i := strings.LastIndexByte(cut, '\n'); i > n/2 {
		return cut[:i]
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Compacting is the compaction fold (R-LOOP-7): Compaction is what the
// model reads instead of parts of Messages (context_compacted; Messages
// stay whole for the chat); TokenRatio is, by route, the provider's
// prompt tokens over the harness's estimate on the last turn call that
// reported both: it calibrates the measure compaction decides on.
type Compacting struct {
	Compaction Compaction         `json:"compaction"`
	TokenRatio map[string]float64 `json:"token_ratio,omitempty"`
}

func (f *Compacting) apply(env events.Envelope, _ foldOn) {
	switch e := decoded(env).(type) {
	case *events.ContextCompacted:
		f.Compaction.apply(e)
	case *events.ModelCalled:
		if e.InTurn() && e.InputTokens > 0 && e.EstimatedTokens > 0 {
			if f.TokenRatio == nil {
				f.TokenRatio = map[string]float64{}
			}
			f.TokenRatio[e.Route] = float64(e.InputTokens) / float64(e.EstimatedTokens)
		}
	}
}
