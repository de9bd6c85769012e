package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/tools"
	"github.com/tmc/langchaingo/llms"
)

// Compaction (R-LOOP-7, seed 004): before a model call the history the
// model reads is kept under the route's window, in four stages run in this
// order, each recorded as a context_compacted event that the state folds
// (so a snapshot plus its tail, a cold replay and an export all see the
// same history):
//
//  1. budget: a single tool result over a quarter of the prompt limit is
//     shown as a preview and a pointer (every call; the full text is in
//     the spill folder, and the log keeps it);
//  2. snip: with more than snipMaxTurns turns before the open run (however
//     few tokens), the turns between the first one and the newest
//     snipKeepTurns are archived behind one note (the log keeps them);
//  3. micro: over the limit, old results the model has already read are
//     replaced by a pointer (tool_output_read brings them back), oldest
//     first, keeping the microKeep newest whole, until the estimate is at
//     80% of the limit;
//  4. summary: still over the limit, the model summarises the oldest turns
//     (a model_called with purpose compaction) and the summary stands in
//     for them, down to half the limit.
//
// The prompt limit is context_window − max_output_tokens of the route.
// Nothing but the budget happens while the history fits, and each
// compaction goes well below the limit (snip once per hundred turns), so the prefix the provider caches stays the same from
// one compaction to the next. Snip and summary cut only at a turn's first
// message before the open run, so a tool call never loses its result.

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
	switch e.Stage {
	case events.CompactBudget, events.CompactMicro:
		if c.Results == nil {
			c.Results = map[string]string{}
		}
		for _, r := range e.Results {
			c.Results[r.CallID] = r.Text
		}
	case events.CompactSnip, events.CompactSummary:
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

// modelView is the history as the model reads it.
func modelView(msgs []Message, c Compaction) []viewed {
	out := make([]viewed, 0, len(msgs))
	ci := 0
	for i := 0; i < len(msgs); i++ {
		if ci < len(c.Cuts) && c.Cuts[ci].From == i {
			cut := c.Cuts[ci]
			out = append(out, viewed{Message: Message{Role: RoleUser, Text: cut.Text}, at: i, cut: true})
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

// Token estimates. Without the provider's tokenizer the harness counts
// bytes/3: conservative for Vietnamese, where chars/4 undercounts by a
// quarter (research §8).
func tokensOf(n int) int { return (n + 2) / 3 }

func msgTokens(m Message) int {
	n := len(m.Text) + 16
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments) + len(c.ID) + 16
	}
	return tokensOf(n)
}

// estimate is the request's size: messages and tool declarations.
func estimate(msgs []llms.MessageContent, defs []llms.Tool) int {
	n := 0
	for _, m := range msgs {
		n += 16
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				n += len(p.Text)
			case llms.ToolCall:
				if p.FunctionCall != nil {
					n += len(p.FunctionCall.Name) + len(p.FunctionCall.Arguments) + len(p.ID) + 16
				}
			case llms.ToolCallResponse:
				n += len(p.Content) + len(p.ToolCallID)
			case llms.ImageURLContent:
				n += imageTokens * 3
			}
		}
	}
	if len(defs) > 0 {
		b, _ := json.Marshal(defs)
		n += len(b)
	}
	return tokensOf(n)
}

// imageTokens is what an image part is counted as (a 1568 px image is
// about 1,600 tokens at the providers that publish a rule).
const imageTokens = 1600

// history is the request for the step on route, compacted first.
func (c *stepCall) history(ctx context.Context, route string) ([]llms.MessageContent, error) {
	if err := c.compactNow(ctx, route, false); err != nil {
		return nil, err
	}
	vs := c.view()
	view := messagesOf(vs)
	vision := c.t.sees(route)
	msgs := c.t.withAttachments(toLLM(c.system, view), vs, c.s.runFrom, vision)
	return withToolImages(msgs, view, c.t.deps.HomeDir, vision), nil
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

// compactNow runs the stages for route. force: the provider said the
// prompt is too long, so the estimate was low: aim at three quarters of it.
func (c *stepCall) compactNow(ctx context.Context, route string, force bool) error {
	t := c.t
	limit, target := c.limits(route)
	fixed := estimate([]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, c.system)}, c.defs)
	size := func() int {
		return estimate(toLLM(c.system, messagesOf(c.view())), c.defs)
	}
	cur := size()
	if force {
		limit = min(limit, cur*3/4)
		target = limit * 8 / 10
	}
	stage := func(e *events.ContextCompacted) error {
		e.RunID, e.Step, e.Before, e.Limit = c.s.openRun, c.step, cur, limit
		c.s.comp.apply(e)
		e.After = size()
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
	if cur > limit {
		if e := c.micro(cur, target); e != nil {
			if err := stage(e); err != nil {
				return err
			}
		}
	}
	// 4. summary
	if cur > limit {
		e, err := c.summary(ctx, route, cur-fixed, limit/2-fixed)
		if err != nil {
			return err
		}
		if e != nil {
			if err := stage(e); err != nil {
				return err
			}
		}
	}
	return nil
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
	if env.SpillDir == "" {
		return "", true
	}
	p, err := tools.Spill(env, m.ToolCallID, m.Text)
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

func (c *stepCall) micro(cur, target int) *events.ContextCompacted {
	view := c.view()
	var results []int // view indexes of tool results, oldest first
	for i, v := range view {
		if v.Role == RoleTool && !v.cut {
			results = append(results, i)
		}
	}
	if len(results) <= microKeep {
		return nil
	}
	var out []events.CompactedResult
	for _, i := range results[:len(results)-microKeep] {
		if cur <= target {
			break
		}
		m := view[i].Message
		if _, done := c.s.comp.Results[m.ToolCallID]; done || !readAfter(view, i) {
			continue
		}
		text := pointer(m, len(m.Text), "")
		if len(text) >= len(m.Text) {
			continue
		}
		spill, ok := c.keep(m)
		if !ok {
			continue
		}
		cur -= msgTokens(m) - tokensOf(len(text)+16)
		out = append(out, events.CompactedResult{CallID: m.ToolCallID, Chars: len(m.Text), Text: text, SpillPath: spill})
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

// summary has the model summarise the oldest turns so that what is left
// holds about goal tokens (history only). It returns nil when there is
// nothing to summarise or the model could not.
func (c *stepCall) summary(ctx context.Context, route string, history, goal int) (*events.ContextCompacted, error) {
	t := c.t
	starts := c.turnStarts()
	if len(starts) < 2 {
		return nil, nil
	}
	// The oldest turns, up to the first start after which the rest fits.
	to := -1
	view := c.view()
	removed := 0
	vi := 0
	for _, s := range starts[1:] {
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
	var transcript strings.Builder
	for _, v := range view {
		if v.at >= to {
			break
		}
		m := v.Message
		switch {
		case m.Role == RoleTool:
			fmt.Fprintf(&transcript, "[tool %s result]\n%s\n\n", m.Tool, cutAtLine(m.Text, 2000))
		default:
			fmt.Fprintf(&transcript, "[%s]\n%s\n", m.Role, m.Text)
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&transcript, "(called %s %s)\n", tc.Name, cutAtLine(string(tc.Arguments), 300))
			}
			transcript.WriteString("\n")
		}
	}
	spec := t.spec(route)
	room := (spec.ContextWindow - spec.MaxOutputTokens - 500) * 3
	text := transcript.String()
	if len(text) > room && room > 0 {
		text = text[:room/3] + "\n[…]\n" + text[len(text)-room*2/3:]
	}
	model, err := t.deps.Models(route)
	if err != nil {
		return nil, nil
	}
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, fmt.Sprintf("You condense the earlier part of a conversation between an owner and their assistant so the assistant can go on without it. Keep facts, names, numbers, decisions, what was done with which tools and what is still open. Write at most %d words, in the conversation's language. Answer with the summary only.", summaryWords)),
		llms.TextParts(llms.ChatMessageTypeHuman, text),
	}
	if ch, ok := budget.ChargeOf(ctx); ok {
		ch.Purpose = events.PurposeCompaction
		ctx = budget.WithCharge(ctx, ch)
	}
	start := t.deps.Clock()
	resp, err := model.GenerateContent(ctx, msgs, llms.WithMaxTokens(min(spec.MaxOutputTokens, 2048)))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	mc := modelCalled(c.s.openRun, c.step, route, resp, t.deps.Clock().Sub(start))
	mc.Purpose, mc.ToolCalls = events.PurposeCompaction, nil
	if err != nil {
		mc.Error = oneLine(err)
	}
	if err := t.emit(ctx, mc); err != nil {
		return nil, err
	}
	if err != nil || resp == nil || len(resp.Choices) == 0 || strings.TrimSpace(resp.Choices[0].Content) == "" {
		return nil, nil
	}
	sum := "[Summary of the earlier part of this conversation, written to keep it within the model's context; the log keeps every message.]\n" + strings.TrimSpace(resp.Choices[0].Content)
	return &events.ContextCompacted{Stage: events.CompactSummary, From: 0, To: to, Text: sum, Route: route}, nil
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
