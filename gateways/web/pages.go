package web

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"sort"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/mcp"
	"github.com/my-agent-crew/crew/ui"
	"github.com/yuin/goldmark"
	"go.etcd.io/bbolt"
)

// Pages builds the views of the web UI from the projections.
type Pages struct {
	DB *bbolt.DB
	// Log gives a conversation's last sequence, which a page waits for
	// the projections to reach (New sets it from Config.Log).
	Log    *events.Log
	Agents []ui.AgentRow
	// Crew, when set, gives the agents listed and the problems of the
	// agents that are not loaded; it wins over Agents (the crew reloads).
	// The chat shows the images of an agent's workspace inbox/ that
	// messages name; none without a crew.
	Crew Crew
	// MCP gives the MCP servers' states for the roster (New sets it from
	// Config.MCP); nil shows none.
	MCP    func() []mcp.State
	Banner string
	// CatchingUp, when set, puts "catching up: N events left" at the top
	// of every page while the projections catch up.
	CatchingUp CatchingUp
	// Fresh is the projections' read-your-writes (the Runner), so a page
	// rendered right after an event shows it; nil: no waiting.
	Fresh projections.Freshness
	Home  string
	// Spills keep the images tool results carried (tools.Spills; crew
	// serve's: the log's object store); nil: files under Home's spill/.
	Spills   Spills
	Location *time.Location
	Clock    func() time.Time
	// SignOut offers the sign-out form (the server asks for a token); New
	// sets it from Config.AuthToken.
	SignOut bool
	// Teams, when set, shows a lead conversation's team (R-TEAM).
	Teams Teams
	// Forking offers "Fork from here" on the runs page's steps; New sets
	// it from Config.Forks.
	Forking bool

	markdown func(text string) string // Markdown; tests slow it down
}

func (p *Pages) shell(ctx context.Context, title, active, csrf string) (ui.Shell, error) {
	read := p.reader()
	list, err := read.Conversations(ctx, 100)
	if err != nil {
		return ui.Shell{}, err
	}
	rows := make([]ui.ConversationRow, 0, len(list))
	for _, c := range list {
		rows = append(rows, p.row(c))
	}
	agents, banner := p.Agents, p.Banner
	if p.Crew != nil {
		var problems []string
		agents, problems = crewRows(p.Crew, p.MCP)
		if len(problems) > 0 {
			banner = strings.TrimSpace("Not loaded (fix the file and save; the crew reloads by itself): " + strings.Join(problems, " · ") + " " + banner)
		}
	}
	if banner == "" && len(list) > 0 {
		banner = p.failingRoute(list[0])
	}
	if p.CatchingUp != nil {
		if left, catching := p.CatchingUp(ctx); catching {
			banner = strings.TrimSpace(fmt.Sprintf("catching up: %d events left (the lists may be incomplete; messages are kept and answered once done)", left) + " " + banner)
		}
	}
	read.NoWait = true // caught up with the log for the list above
	recent, err := read.Activity(ctx, 5)
	if err != nil {
		return ui.Shell{}, err
	}
	loc := p.Location
	if loc == nil {
		loc = time.UTC
	}
	var activity []ui.ActivityRow
	for _, it := range recent {
		activity = append(activity, ui.ActivityRow{Type: it.Type, Text: it.Text, At: it.At.In(loc).Format("Jan 2 15:04"), Job: it.Job, Problem: it.Problem})
	}
	return ui.Shell{Title: title, Home: p.Home, Agents: agents, Conversations: rows, Active: active, CSRF: csrf, Banner: banner, SignOut: p.SignOut,
		Activity: activity}, nil
}

// failingRoute says so when the latest run had to fall back or failed on
// its models, so the owner sees a broken key or a down provider at once.
func (p *Pages) failingRoute(c projections.Conversation) string {
	if c.LastRunID == "" {
		return ""
	}
	r, err := projections.GetRun(p.DB, c.LastRunID)
	if err != nil || len(r.Steps) == 0 {
		return ""
	}
	last := r.Steps[len(r.Steps)-1]
	for _, f := range last.Fallbacks {
		if f.Reason != events.FallbackVision {
			return fmt.Sprintf("Route %s is failing (%s); answers come from the next route.", f.From, f.Error)
		}
	}
	if r.Status == events.RunFailed && r.Reason == "model_error" {
		return "In the last run (" + c.ID + "): " + view.Ending{Status: r.Status, Reason: r.Reason, Error: r.Error}.Notice(p.Home)
	}
	return ""
}

func (p *Pages) row(c projections.Conversation) ui.ConversationRow {
	title := c.Title
	if title == "" {
		title = c.ID
	}
	return ui.ConversationRow{ID: c.ID, Title: title, Agent: c.Agent, Channel: c.Channel, Status: c.Status,
		Updated: c.Updated.In(p.Location).Format("Jan 2 15:04"), Queued: c.Queued, Root: c.RootID}
}

func (p *Pages) home(ctx context.Context, csrf string) (ui.HomeView, error) {
	sh, err := p.shell(ctx, "my-agent-crew", "", csrf)
	return ui.HomeView{Shell: sh, Conversations: sh.Conversations}, err
}

// conversation builds the chat of one conversation from the chat
// projection, once the projections have applied every event the log held
// of it when asked (never older than what the API already said).
func (p *Pages) conversation(ctx context.Context, id, csrf string) (ui.ConversationView, error) {
	p.caughtUpOn(ctx, id)
	v, c, _, _, err := p.chat(ctx, id, csrf, p.render())
	if err != nil {
		return ui.ConversationView{}, err
	}
	if v.Shell, err = p.shell(ctx, c.Title, id, csrf); err != nil {
		return ui.ConversationView{}, err
	}
	if p.Teams != nil {
		if v.Team, err = p.Teams.Exists(ctx, id); err != nil {
			return ui.ConversationView{}, err
		}
	}
	return v, nil
}

// chat is the chat of conversation id as the projections hold it now,
// without the page around it: the view, the conversation and the chat's
// items (a live patch compares them with the ones it sent).
func (p *Pages) chat(ctx context.Context, id, csrf string, render func(string) string) (ui.ConversationView, projections.Conversation, projections.ChatHead, []projections.ChatItem, error) {
	c, err := projections.GetConversation(p.DB, id)
	if errors.Is(err, projections.ErrNotFound) {
		return ui.ConversationView{}, c, projections.ChatHead{}, nil, fmt.Errorf("conversation %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return ui.ConversationView{}, c, projections.ChatHead{}, nil, err
	}
	head, items, err := projections.GetChat(p.DB, id)
	if errors.Is(err, projections.ErrNotFound) {
		head, err = projections.ChatHead{Conversation: id}, nil // the chat projection has not reached it yet
	}
	if err != nil {
		return ui.ConversationView{}, c, projections.ChatHead{}, nil, err
	}
	var v ui.ConversationView
	v.CSRF = csrf
	v.Items = chatView(head, items, render)
	v.LastSeq = head.Seq
	running := head.OpenRun != ""
	if running {
		v.Waiting = len(head.Queued)
	}
	if len(head.Questions) > 0 {
		q := head.Questions[0]
		v.Question = &ui.QuestionBar{ID: q.ID, Question: q.Text, Choices: q.Choices, ExpiresAt: q.ExpiresAt, ExpiresIn: p.left(q.ExpiresAt)}
	}
	if len(head.Approvals) > 0 {
		a := head.Approvals[0]
		v.Approval = &ui.ApprovalCard{ID: a.ID, Tool: a.Tool, Source: view.ToolSource(a.Tool), Reason: a.Reason, ExpiresAt: a.ExpiresAt, ExpiresIn: p.left(a.ExpiresAt)}
		for _, it := range items {
			if it.Kind == projections.ChatCall && it.Call.ID == a.CallID && it.Result == nil {
				v.Approval.Args, v.Approval.Blocks = readable(it.Call.Arguments)
			}
		}
	}
	v.Conv = p.row(c)
	switch {
	case v.Approval != nil:
		v.Conv.Status = projections.ConversationAwaitingApproval
	case v.Question != nil:
		v.Conv.Status = projections.ConversationAwaitingAnswer
	case running:
		v.Conv.Status = projections.ConversationRunning
	}
	if v.Approval == nil {
		// A delegated child's approval surfaces on its root (R-DEL).
		for _, a := range c.PendingApprovals {
			if a.Conversation == "" || a.Conversation == id {
				continue
			}
			v.Conv.Status = projections.ConversationAwaitingApproval
			v.Approval = &ui.ApprovalCard{ID: a.ID, Tool: a.Tool, Source: view.ToolSource(a.Tool), Reason: a.Reason, ExpiresAt: a.ExpiresAt,
				ExpiresIn: p.left(a.ExpiresAt), From: p.agentName(a.Agent), Conversation: a.Conversation}
			v.Approval.Args, v.Approval.Blocks = readable(a.Arguments)
			break
		}
	}
	if !running && v.Approval == nil {
		v.Ending = p.ending(c, head.Asked)
	}
	v.Active = running || len(head.Queued) > 0 || v.Approval != nil
	for _, it := range v.Items {
		if it.Delegate != nil {
			it.Delegate.AgentName = p.agentName(it.Delegate.Agent)
		}
	}
	return v, c, head, items, nil
}

// ending is the notice of how the conversation's last run ended, while no
// message came after it: nil when the run answered normally (R-WEB; the
// words are view.Ending's, the same Telegram sends).
func (p *Pages) ending(c projections.Conversation, question string) *ui.RunEnding {
	if c.LastRunID == "" || c.Queued > 0 || c.Closed != nil {
		return nil
	}
	r, err := projections.GetRun(p.DB, c.LastRunID)
	if err != nil || r.Finished == nil {
		return nil
	}
	end := view.Ending{Status: r.Status, Reason: r.Reason, Error: r.Error, By: r.StoppedBy,
		CostUSD: r.Totals.CostUSD, UnknownCostCalls: r.Totals.UnknownCostCalls}
	for _, s := range r.Steps {
		for _, m := range s.ModelCalls {
			end.Replied = end.Replied || (m.Error == "" && m.Text != "")
		}
	}
	if end.Reason == "ask_user" {
		end.Question = question
	}
	kind := end.Kind()
	if kind == "" {
		return nil
	}
	v := &ui.RunEnding{Kind: kind, Status: r.Status, Reason: r.Reason, Text: end.Notice(p.Home)}
	if kind != view.EndAsks {
		v.Spend = end.Spend()
	}
	return v
}

// readable lays out tool arguments for the owner: commands and texts as
// blocks, the rest as JSON without escapes (view.ReadableArgs).
func readable(raw json.RawMessage) (string, []ui.ArgBlock) {
	rest, texts := view.ReadableArgs(raw)
	var blocks []ui.ArgBlock
	for _, t := range texts {
		blocks = append(blocks, ui.ArgBlock{Name: t.Name, Text: t.Text})
	}
	return rest, blocks
}

// render is the Markdown renderer of model text.
func (p *Pages) render() func(string) string {
	if p.markdown != nil {
		return p.markdown
	}
	return Markdown
}

// caughtUpOn waits, at most two seconds, for the projections to apply
// every event the log holds of conversation id.
func (p *Pages) caughtUpOn(ctx context.Context, id string) {
	caughtUpOn(ctx, p.Log, p.Fresh, events.Conv(id).Filter())
}

// reader reads p's projections once they have applied what the log
// held (projections.Reader).
func (p *Pages) reader() projections.Reader {
	return projections.Reader{DB: p.DB, Log: p.Log, Fresh: p.Fresh}
}

// caughtUp waits, at most two seconds, for the projections to apply seq.
func (p *Pages) caughtUp(ctx context.Context, seq uint64) { caughtUp(ctx, p.Fresh, seq) }

// caughtUpOn waits, at most two seconds, for fresh to apply the log's
// last event on filter; with no log or no freshness it does not wait.
func caughtUpOn(ctx context.Context, log *events.Log, fresh projections.Freshness, filter string) {
	projections.Reader{Log: log, Fresh: fresh}.CaughtUp(ctx, filter)
}

// caughtUp waits, at most two seconds, for fresh to apply seq; on a
// timeout or a stopped projection the caller shows what there is.
func caughtUp(ctx context.Context, fresh projections.Freshness, seq uint64) {
	projections.Reader{Fresh: fresh}.Applied(ctx, seq)
}

// agentName is an agent as the roster names it.
func (p *Pages) agentName(id string) string {
	agents := p.Agents
	if p.Crew != nil {
		agents, _ = crewRows(p.Crew, p.MCP)
	}
	for _, a := range agents {
		if a.ID == id && a.Name != "" {
			return a.Name
		}
	}
	return id
}

func (p *Pages) left(at time.Time) string {
	d := at.Sub(p.Clock()).Round(time.Second)
	if d <= 0 {
		return "expired"
	}
	return fmt.Sprintf("%dm %02ds left", int(d.Minutes()), int(d.Seconds())%60)
}

// unescapeHTML undoes the JSON escapes of <, > and & that Go's encoder
// writes, in argument text too cut to be decoded.
var unescapeHTML = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")

// md renders Markdown without raw HTML (goldmark's default: raw HTML is
// omitted and dangerous link schemes are dropped), so model text cannot
// inject markup.
var md = goldmark.New()

// Markdown renders model text to safe HTML.
func Markdown(text string) string {
	var buf bytes.Buffer
	if err := md.Convert([]byte(text), &buf); err != nil {
		return "<pre>" + html.EscapeString(text) + "</pre>"
	}
	return buf.String()
}

// runs builds the runs page.
func (p *Pages) runs(ctx context.Context, id, csrf string) (ui.RunsView, error) {
	c, err := projections.GetConversation(p.DB, id)
	if errors.Is(err, projections.ErrNotFound) {
		return ui.RunsView{}, fmt.Errorf("conversation %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return ui.RunsView{}, err
	}
	sh, err := p.shell(ctx, "Runs · "+c.Title, id, csrf)
	if err != nil {
		return ui.RunsView{}, err
	}
	v := ui.RunsView{Shell: sh, Conv: p.row(c), LastSeq: c.LastSeq}
	list, err := projections.ListRuns(p.DB, id)
	if err != nil {
		return v, err
	}
	for _, s := range list {
		card, err := p.runCard(s.RunID, 0)
		if err != nil {
			return v, err
		}
		if p.Forking {
			forkForms(&card, s, csrf)
		}
		v.Runs = append(v.Runs, card)
	}
	if p.Forking {
		v.ForkRoutes = p.forkRoutes(v.Runs)
	}
	return v, nil
}

func (p *Pages) runCard(id string, depth int) (ui.RunCard, error) {
	r, err := projections.GetRun(p.DB, id)
	if err != nil {
		return ui.RunCard{}, err
	}
	card := ui.RunCard{ID: r.RunID, Agent: r.Agent, Trigger: r.Trigger, Status: r.Status, Reason: r.Reason, Error: r.Error,
		Started: r.Started.In(p.Location).Format("Jan 2 15:04:05"),
		Tokens:  fmt.Sprintf("%d in / %d out", r.Totals.InputTokens, r.Totals.OutputTokens),
		Cost:    fmt.Sprintf("$%.4f", r.Totals.CostUSD)}
	if r.Totals.CachedInputTokens > 0 {
		card.Tokens = fmt.Sprintf("%d in (%d from the prompt cache, saved $%.4f) / %d out", r.Totals.InputTokens, r.Totals.CachedInputTokens, r.Totals.CacheSavedUSD, r.Totals.OutputTokens)
	}
	if r.Totals.DelegatedCostUSD > 0 {
		card.Cost += fmt.Sprintf(" ($%.4f by delegates)", r.Totals.DelegatedCostUSD)
	}
	if r.Totals.UnknownCostCalls > 0 {
		card.Cost += fmt.Sprintf(" + %d calls of unknown cost", r.Totals.UnknownCostCalls)
	}
	card.ForkedFrom, card.Forks = forkLinks(r.RunSummary)
	if r.Finished != nil && r.Status != events.RunDone {
		card.Notice = view.Ending{Status: r.Status, Reason: r.Reason, Error: r.Error, By: r.StoppedBy}.Notice(p.Home)
	}
	nested := map[string]bool{} // child runs shown under their delegate call
	if r.Finished != nil {
		card.Duration = r.Finished.Sub(r.Started).Round(time.Millisecond).String()
	}
	for _, s := range r.Steps {
		sc := ui.StepCard{N: s.Step}
		for _, c := range s.Compactions {
			sc.Lines = append(sc.Lines, compactionLine(c))
		}
		for _, r := range s.Retries {
			sc.Lines = append(sc.Lines, retryLine(r))
		}
		for _, f := range s.Fallbacks {
			line := fmt.Sprintf("route_fallback: %s failed (%s), trying %s", f.From, f.Error, f.To)
			if f.Reason == events.FallbackVision {
				line = fmt.Sprintf("route_fallback (vision): the request carries an image %s cannot see; this call went to %s", f.From, f.To)
			}
			if f.Text != "" {
				line += fmt.Sprintf("; what it had written was kept, interrupted: %q", f.Text)
			}
			sc.Lines = append(sc.Lines, line)
		}
		for _, m := range s.ModelCalls {
			cost := "unknown"
			if m.CostUSD != nil {
				cost = fmt.Sprintf("$%.4f", *m.CostUSD)
			}
			sc.ModelCalls = append(sc.ModelCalls, ui.ModelCallLine{Route: m.Route, Model: m.Model,
				Tokens: modelTokens(m), Cost: cost,
				Latency: fmt.Sprintf("%d ms", m.LatencyMS), Text: m.Text, Tools: strings.Join(m.ToolCalls, ", "), Error: m.Error})
		}
		for _, t := range s.ToolCalls {
			tc := ui.ToolCard{CallID: t.CallID, Tool: t.Tool, Output: t.Output,
				IsError: t.IsError, Outcome: t.Outcome, Running: !t.Completed, Todo: todoLines(t.Tool, json.RawMessage(t.Args))}
			for _, n := range t.Nested {
				tc.Nested = append(tc.Nested, nestedLine(n.N, n.Tool, n.IsError, n.Chars, n.DurationMS, n.CostUSD))
			}
			tc.Args, tc.Blocks = readable(json.RawMessage(t.Args))
			if len(tc.Blocks) == 0 {
				tc.Args = unescapeHTML.Replace(tc.Args) // cut JSON is shown as it is, but readable
			}
			for _, a := range s.Approvals {
				if a.CallID == t.CallID && a.Decision == "" && !t.Completed {
					tc.Running, tc.Waiting = false, true
				}
			}
			if d := t.Delegate; d != nil && d.RunID != "" && depth < 4 {
				child, err := p.runCard(d.RunID, depth+1)
				if err != nil && !errors.Is(err, projections.ErrNotFound) {
					return card, err
				}
				if err == nil {
					tc.Child, nested[d.RunID] = &child, true
				}
			}
			sc.ToolCalls = append(sc.ToolCalls, tc)
		}
		for _, a := range s.Approvals {
			line := fmt.Sprintf("approval for %s: %s", a.Tool, cmp.Or(a.Decision, "pending"))
			if a.Always {
				line += " (always)"
			}
			if a.Reason != "" {
				line += " — " + a.Reason
			}
			sc.Lines = append(sc.Lines, line)
		}
		if e := s.Escalated; e != nil {
			line := fmt.Sprintf("escalated (%s) to %s", e.Reason, e.Route)
			if e.Error != "" {
				line += ": " + e.Error
			}
			sc.Lines = append(sc.Lines, line)
		}
		for range s.Reminders {
			sc.Lines = append(sc.Lines, "loop guard reminder sent")
		}
		if s.Steers > 0 {
			sc.Lines = append(sc.Lines, fmt.Sprintf("%d steer message(s) taken in", s.Steers))
		}
		card.Steps = append(card.Steps, sc)
	}
	sort.SliceStable(card.Steps, func(i, j int) bool { return card.Steps[i].N < card.Steps[j].N })
	if depth < 4 {
		for _, ch := range r.Children {
			if nested[ch.RunID] {
				continue
			}
			child, err := p.runCard(ch.RunID, depth+1)
			if err != nil {
				return card, err
			}
			card.Children = append(card.Children, child)
		}
	}
	return card, nil
}

// canvasVerbs name an agent's canvas writes on the chat's card.
var canvasVerbs = map[string]string{events.OpCreate: "created", events.OpEdit: "edited", events.OpRewrite: "rewritten", events.OpImport: "imported"}

// todoLines is a todo_write call's checklist for its card.
func todoLines(tool string, args json.RawMessage) []ui.TodoLine {
	if tool != "todo_write" {
		return nil
	}
	items, err := tools.TodoItems(args)
	if err != nil {
		return nil
	}
	out := make([]ui.TodoLine, len(items))
	for i, it := range items {
		out[i] = ui.TodoLine{Text: it.Text, Done: it.Done}
	}
	return out
}

// nestedLine is one call of a script as its cards show it (R-SCR).
func nestedLine(n int, tool string, isErr bool, chars int, ms int64, cost *float64) string {
	line := fmt.Sprintf("%d. %s — %d chars, %d ms", n, tool, chars, ms)
	if cost != nil {
		line += fmt.Sprintf(", $%.4f", *cost)
	}
	if isErr {
		line += " (error)"
	}
	return line
}

// scriptContext lays out a finished script's context (loop.Message):
// its calls in written order and the two sizes.
func scriptContext(raw json.RawMessage) (lines []string, sizes string) {
	if len(raw) == 0 {
		return nil, ""
	}
	var c struct {
		Calls []struct {
			N       int    `json:"n"`
			Tool    string `json:"tool"`
			IsError bool   `json:"is_error"`
			Chars   int    `json:"chars"`
		} `json:"calls"`
		Received *int `json:"received_chars"`
		Printed  *int `json:"printed_chars"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return nil, ""
	}
	for _, x := range c.Calls {
		line := fmt.Sprintf("%d. %s — %d chars", x.N, x.Tool, x.Chars)
		if x.IsError {
			line += " (error)"
		}
		lines = append(lines, line)
	}
	if c.Received != nil && c.Printed != nil {
		sizes = fmt.Sprintf("received_chars %d · printed_chars %d", *c.Received, *c.Printed)
	}
	return lines, sizes
}

// modelTokens is a model call's tokens on the run card: in (cached,
// written to the cache), out.
func modelTokens(m projections.ModelCall) string {
	in := fmt.Sprint(m.InputTokens)
	if m.CachedInputTokens > 0 || m.CacheWriteTokens > 0 {
		in += fmt.Sprintf(" (%d cached, %d written to the cache)", m.CachedInputTokens, m.CacheWriteTokens)
	}
	return fmt.Sprintf("%s in / %d out", in, m.OutputTokens)
}
