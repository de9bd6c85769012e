package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/memlog"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/kit"
)

// Replay re-drives the loop over a recorded run (R-OBS-3): the model
// answers with the recorded replies, tools answer with the recorded results,
// the owner's inputs (steers, decisions) arrive where they arrived — no
// network, no tool executed, nothing written to the real log. Each event the
// loop produces is compared with the recorded one.

// ReplayLine is one compared event.
type ReplayLine struct {
	Index    int    // 1-based among the run's loop events
	Step     int    // model-call step, when the event has one
	Type     string // recorded type
	OK       bool
	Expected string // JSON, on divergence
	Got      string // JSON, on divergence
}

// ReplayReport is the outcome of a replay.
type ReplayReport struct {
	RunID        string
	Conversation string
	Lines        []ReplayLine
	// Diverged is the first line that differs (nil when identical).
	Diverged *ReplayLine
}

// loopOutputs are the event types the loop produces; everything else in a
// run's span is an input (owner messages, steers, decisions).
var loopOutputs = map[string]bool{
	events.TypeRunStarted: true, events.TypeModelCalled: true, events.TypeRouteFallback: true,
	events.TypeEscalated: true, events.TypeToolCalled: true, events.TypeToolCompleted: true,
	events.TypeApprovalRequested: true, events.TypeSteersApplied: true, events.TypeGuardReminded: true,
	events.TypeRunFinished: true, events.TypeModelRetried: true, events.TypeContextCompacted: true,
	events.TypeQuestionAsked: true, events.TypeHookRan: true,
}

var errDiverged = errors.New("replay diverged")

// Replay replays run runID of a conversation whose events are envs (as
// read from the log). agent is the agent as configured now; registry gives
// the tools' gate behaviour (their Run is never called).
//
// override, when set, answers every model call instead of the recorded
// replies (a changed script, another model): the report then shows where
// the run would have gone differently.
func Replay(ctx context.Context, envs []events.Envelope, runID string, agent Agent, registry *tools.Registry, loc *time.Location, override llm.Model) (*ReplayReport, error) {
	return ReplayWith(ctx, envs, runID, agent, Deps{Tools: registry, Clock: WallClock{Zone: loc}}, override)
}

// ReplayWith is Replay on the crew's own Deps (crew replay passes those
// its App built, as serve's): the loop decides with the same registry,
// catalog (Spec: context windows, prices), roster and home as the run
// did. What has effects or reaches out is replaced: the models answer as
// recorded (or override), the tools' results are the recorded ones, the
// clock and ids are the run's, the log is in memory (a teammate's board
// is read through base.Teams); nothing is
// delegated, nothing runs in the background, no delta is published.
func ReplayWith(ctx context.Context, envs []events.Envelope, runID string, agent Agent, base Deps, override llm.Model) (*ReplayReport, error) {
	registry := base.Tools
	// envs may hold the events of the conversation's team (its board and
	// mailboxes, in stream order with the conversation's): a seated turn
	// reads the board as it stood at each step.
	var side []events.Envelope
	{
		conv := ""
		for _, env := range envs {
			if env.Type != events.TypeRunStarted {
				continue
			}
			if e, err := env.Decode(); err == nil && e.(*events.RunStarted).RunID == runID {
				conv = events.ScopeOf(env.Subject).ID()
				break
			}
		}
		own := envs[:0:0]
		for _, env := range envs {
			if conv == "" || events.ScopeOf(env.Subject) == events.Conv(conv) {
				own = append(own, env)
			} else {
				side = append(side, env)
			}
		}
		envs = own
	}
	start := -1
	for i, env := range envs {
		if env.Type == events.TypeRunStarted {
			e, err := env.Decode()
			if err != nil {
				return nil, err
			}
			if e.(*events.RunStarted).RunID == runID {
				start = i
				break
			}
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("run %s: no run_started in the conversation", runID)
	}
	conv := events.ScopeOf(envs[start].Subject).ID()
	// A fork's run starts open, on the state conversation_forked carries:
	// the loop takes it up from there as it did live.
	if start+1 < len(envs) && envs[start+1].Type == events.TypeConversationForked {
		start += 2
	}
	var outputs, inputs []events.Envelope
	var inputAt []int // index into outputs the input precedes
	finished := false
	for _, env := range envs[start:] {
		if finished {
			break
		}
		if loopOutputs[env.Type] {
			if belongs(env, runID) {
				outputs = append(outputs, env)
				if env.Type == events.TypeRunFinished {
					finished = true
				}
			}
			continue
		}
		inputs = append(inputs, env)
		inputAt = append(inputAt, len(outputs))
	}
	rep := &ReplayReport{RunID: runID, Conversation: conv}

	// Recorded ids in the order the loop will ask for them.
	var ids []string
	attempts := map[string][]attempt{}
	results := map[string][]*events.ToolCompleted{} // by tool, in run order
	called := map[string]bool{}
	passed := map[string]bool{}                     // started, or asked about
	delegated := map[string]*events.ToolCompleted{} // by call id
	answered := map[string]*events.ToolCompleted{}  // every result, by call id
	pinned := &pins{run: runID, systems: map[int]string{}, tried: map[int][]string{}}
	var system string // the latest a step recorded
	halt := &budgetHalt{}
	for _, env := range outputs {
		e, err := env.Decode()
		if err != nil {
			return nil, err
		}
		switch e := e.(type) {
		case *events.RunStarted:
			ids = append(ids, e.RunID)
		case *events.ApprovalRequested:
			ids = append(ids, e.ApprovalID)
			passed[e.CallID] = true
		case *events.QuestionAsked:
			ids = append(ids, e.QuestionID)
			passed[e.CallID] = true
		case *events.HookRan:
			pinned.hookRan(e)
		case *events.RouteFallback:
			if !e.Vision() { // a vision move made no call on From
				attempts[e.From] = append(attempts[e.From], attempt{err: e.Error})
				pinned.route(e.Step, e.From)
				pinned.route(e.Step, e.To)
			} else {
				pinned.seeing(e.Step)
			}
		case *events.ModelCalled:
			if e.InTurn() || e.Purpose == events.PurposeCompaction || e.Purpose == events.PurposeVision {
				attempts[e.Route] = append(attempts[e.Route], attempt{reply: e})
			}
			if e.InTurn() {
				if e.System != "" {
					system = e.System
				}
				if system != "" {
					pinned.systems[e.Step] = system
				}
				if e.Purpose != events.PurposeEscalation {
					pinned.route(e.Step, e.Route)
				}
			}
		case *events.RunFinished:
			if e.Status == events.RunHalted && e.Reason == "budget" {
				halt.sentence = e.Error // the ledger refused the next call
			}
		case *events.ModelRetried:
			attempts[e.Route] = append(attempts[e.Route], attempt{retry: e})
		case *events.ToolCalled:
			called[e.CallID], passed[e.CallID] = true, true
		case *events.ToolCompleted:
			answered[e.CallID] = e
			if e.Tool == DelegateTool {
				delegated[e.CallID] = e
			} else if called[e.CallID] { // the tool ran: its Run produced this
				results[e.Tool] = append(results[e.Tool], e)
			}
		}
	}
	mem := memlog.New(envs[:start])
	next, fed := 0, 0
	feed := func(upTo int) {
		for fed < len(inputs) && inputAt[fed] <= upTo {
			mem.Put(events.Conv(conv), inputs[fed])
			fed++
		}
	}
	// The team's events up to the run's start; later ones as the replay
	// reaches their place in the stream.
	sideAt := 0
	var sideLog *memlog.MemLog
	feedSide := func(before uint64) {
		for sideAt < len(side) && side[sideAt].Seq < before {
			sideLog.Put(events.ScopeOf(side[sideAt].Subject), side[sideAt])
			sideAt++
		}
	}
	if len(side) > 0 && len(outputs) > 0 {
		sideLog = memlog.New(nil)
		feedSide(outputs[0].Seq)
	}
	// An input stored while the run went on (a steer, a stop) arrives
	// before the loop's next event as it did live: that append meets a
	// conflict, the conversation catches up and decides again. A restart
	// of the server (run_resumed) ends the pass there, as the crash did.
	feeding := &feedingLog{MemLog: mem, due: func() error {
		if sideLog != nil && next < len(outputs) {
			feedSide(outputs[next].Seq)
		}
		restart := false
		for i := fed; i < len(inputs) && inputAt[i] <= next; i++ {
			restart = restart || inputs[i].Type == events.TypeRunResumed
		}
		feed(next)
		if restart {
			return errRestarted
		}
		return nil
	}}
	mem.OnAppend(func(env events.Envelope) error {
		if !loopOutputs[env.Type] {
			return nil
		}
		if next >= len(outputs) {
			line := ReplayLine{Index: next + 1, Type: "(none)", Got: describe(env)}
			rep.Lines = append(rep.Lines, line)
			rep.Diverged = &rep.Lines[len(rep.Lines)-1]
			return errDiverged
		}
		want := outputs[next]
		line := ReplayLine{Index: next + 1, Type: want.Type, Step: stepOf(want)}
		if !sameEvent(want, env) {
			line.Expected, line.Got = describe(want), describe(env)
			rep.Lines = append(rep.Lines, line)
			rep.Diverged = &rep.Lines[len(rep.Lines)-1]
			return errDiverged
		}
		line.OK = true
		rep.Lines = append(rep.Lines, line)
		next++
		return nil
	})
	// The recorded inputs that came before the run's first event.
	feed(0)
	// Tools answer as recorded; a delegate call is answered as recorded
	// too, and its child is a run of its own, replayed on its own.
	rec := &record{results: results, delegated: delegated, answered: answered, passed: passed, stop: &replayStop{}}
	replayTools := make([]tools.Tool, 0)
	for _, name := range registry.Names() {
		t, _ := registry.Lookup(name)
		replayTools = append(replayTools, replayed(t, rec))
	}
	for _, t := range Tools() { // the loop's own, also when registry leaves them out
		if _, ok := registry.Lookup(t.Def().Name); !ok {
			replayTools = append(replayTools, replayed(t, rec))
		}
	}
	// The MCP tools are the ones the conversation's searches declared, as
	// recorded: no server is asked.
	var mcpSet MCP
	if base.Services.MCP != nil {
		mcpSet = recordedMCP(envs, rec)
	}
	reg, err := tools.New(replayTools...)
	if err != nil {
		return nil, err
	}
	var clock time.Time
	if len(outputs) > 0 {
		clock = outputs[0].Time
	}
	var zone *time.Location
	if base.Clock != nil {
		zone = base.Clock.Location()
	}
	deps := Deps{
		HomeDir: base.HomeDir,
		Crew:    base.Crew,
		// The seat (a lead's prompt and tools, a member's board) and the
		// MCP tools as recorded; nothing runs in the background and no
		// proposal is filed.
		Services: Services{Teams: base.Services.Teams, MCP: mcpSet},
		Models: llm.ModelsFunc(func(route string) (llm.Model, error) {
			if override != nil {
				return override, nil
			}
			return &recordedModel{route: route, attempts: attempts, halt: halt}, nil
		}),
		Tools: reg,
		Clock: &replayClock{now: clock, zone: zone, ids: ids},
	}
	if rt, ok := base.Services.Teams.(replayTeams); ok && sideLog != nil {
		deps.Services.Teams = rt.Replaying(sideLog)
	}
	agent.ToolOutputChars = 1 << 30 // recorded outputs are already cut
	// The routes are the run's, not today's config: the question is whether
	// the loop decides the same given the same answers.
	agent.Routes, agent.EscalationRoute = recordedRoutes(outputs)
	convs := NewConvs(feeding, nil)
	for rounds := 0; rounds < 1000 && rep.Diverged == nil && next < len(outputs); rounds++ {
		c, err := convs.Get(ctx, conv)
		if err != nil {
			return nil, err
		}
		if err := c.Refresh(ctx); err != nil { // the inputs fed since
			return nil, err
		}
		before := next
		turn := NewTurn(agent, deps, c)
		turn.replayed = pinned
		pass, cut := context.WithCancelCause(ctx)
		rec.stop.cancel = cut
		err = turn.Run(pass)
		wasStopped := stopped(pass)
		cut(nil)
		if errors.Is(err, errDiverged) || rep.Diverged != nil {
			break
		}
		if errors.Is(err, errRestarted) {
			continue // the restarted server's pass takes the run up
		}
		if wasStopped {
			continue // as live, the next pass closes the stopped run
		}
		if err != nil {
			return rep, err
		}
		// Paused (an approval, a question) or done: give the loop what the
		// owner did next, and go on.
		fedBefore := fed
		feed(next)
		if next == before && fed == fedBefore {
			break
		}
	}
	if rep.Diverged == nil && next < len(outputs) {
		want := outputs[next]
		rep.Lines = append(rep.Lines, ReplayLine{Index: next + 1, Type: want.Type, Step: stepOf(want), Expected: describe(want), Got: "(the replayed loop stopped here)"})
		rep.Diverged = &rep.Lines[len(rep.Lines)-1]
	}
	return rep, nil
}

// recordedRoutes lists the run's routes in the order it tried them, and its
// escalation route.
func recordedRoutes(outputs []events.Envelope) (routes []string, escalation string) {
	seen := map[string]bool{}
	add := func(r string) {
		if r != "" && !seen[r] && r != escalation {
			seen[r] = true
			routes = append(routes, r)
		}
	}
	for _, env := range outputs {
		e, err := env.Decode()
		if err != nil {
			continue
		}
		switch e := e.(type) {
		case *events.Escalated:
			escalation = e.Route
		case *events.RouteFallback:
			add(e.From)
			if !e.Vision() { // a vision route is the agent's vision_routes', not one of its routes
				add(e.To)
			}
		case *events.ModelCalled:
			if e.InTurn() {
				add(e.Route)
			}
		}
	}
	return routes, escalation
}

// pins are what a replayed run's steps sent, as recorded: the system
// prompt (the latest a model_called of the run recorded at or before the
// step) and the routes the step tried in order. The replay sends them
// whatever the files and MY_AGENT_ROUTES say now, as a fork's first step
// does (R-X-2).
type pins struct {
	run     string
	systems map[int]string
	tried   map[int][]string
	vision  map[int]bool
	// hooks are the owner's hook runs as recorded, in order, by where they
	// ran: a replay answers a hook from them and never runs its command.
	hooks map[hookAt][]kit.Outcome
}

// hookAt is where a hook ran: the run, its step, the hook event and the
// call it ran around (none for UserPromptSubmit and Stop).
type hookAt struct {
	run, hook, call string
	step            int
}

// hookRan keeps one recorded hook run for the replay to answer with.
func (p *pins) hookRan(e *events.HookRan) {
	if p.hooks == nil {
		p.hooks = map[hookAt][]kit.Outcome{}
	}
	o := kit.Outcome{Command: e.Command, ExitCode: e.ExitCode, Output: e.Output, Blocked: e.Blocked,
		TimedOut: e.TimedOut, Duration: time.Duration(e.DurationMS) * time.Millisecond}
	if e.ExitCode == 2 || e.Blocked {
		o.Reason = strings.TrimSpace(e.Output) // what the model or the owner was told
	}
	at := hookAt{run: e.RunID, hook: e.Hook, call: e.CallID, step: e.Step}
	p.hooks[at] = append(p.hooks[at], o)
}

// hooksRan answers the hooks of event at run's step around call as they
// were recorded (nothing when none ran there); a replay never runs the
// owner's commands, which may have effects.
func (p *pins) hooksRan(run string, step int, event, call string) []kit.Outcome {
	return p.hooks[hookAt{run: run, hook: event, call: call, step: step}]
}

func (p *pins) route(step int, r string) {
	if r != "" && !slices.Contains(p.tried[step], r) {
		p.tried[step] = append(p.tried[step], r)
	}
}

// seeing: step went to the vision routes (an image), which the agent's
// vision_routes decide: its routes are not pinned.
func (p *pins) seeing(step int) {
	if p.vision == nil {
		p.vision = map[int]bool{}
	}
	p.vision[step] = true
}

// system is what step of run sent; false on a live turn (nil p).
func (p *pins) system(run string, step int) (string, bool) {
	if p == nil || run != p.run {
		return "", false
	}
	s, ok := p.systems[step]
	return s, ok
}

// routes are the routes step of run tried; false on a live turn.
func (p *pins) routes(run string, step int) ([]string, bool) {
	if p == nil || run != p.run || len(p.tried[step]) == 0 || p.vision[step] {
		return nil, false
	}
	return slices.Clone(p.tried[step]), true
}

// feedingLog is the replay's in-memory log: before each append it stores
// the recorded inputs due by then (due), so the append meets them; due's
// error refuses the append.
type feedingLog struct {
	*memlog.MemLog
	due func() error
}

func (l *feedingLog) Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error) {
	if err := l.due(); err != nil {
		return nil, err
	}
	return l.MemLog.Append(ctx, scope, expect, envs...)
}

// errRestarted ends a replayed pass where the recorded server restarted.
var errRestarted = errors.New("replay: the recorded server restarted here")

// replayTeams is a Teams that seats a replay's turns on the recorded
// boards (team.Runtime).
type replayTeams interface {
	Replaying(log Appender) Teams
}

// budgetHalt is the ledger's refusal that ended the run (run_finished
// halted budget): the recorded models answer the call it refused with it.
type budgetHalt struct{ sentence string }

type attempt struct {
	reply *events.ModelCalled
	retry *events.ModelRetried
	err   string
}

// replayClock is a replay's clock: the time the run's first event was
// stored, the recorded ids in the order the loop asked for them, the
// owner's zone, and no waits.
type replayClock struct {
	now  time.Time
	zone *time.Location
	ids  []string
}

func (c *replayClock) Now() time.Time                           { return c.now }
func (c *replayClock) Location() *time.Location                 { return c.zone }
func (*replayClock) Sleep(context.Context, time.Duration) error { return nil }

// NewID is the next recorded id; past the recorded ones, "replay-extra".
func (c *replayClock) NewID() string {
	if len(c.ids) == 0 {
		return "replay-extra"
	}
	id := c.ids[0]
	c.ids = c.ids[1:]
	return id
}

// recordedModel answers with the recorded attempts of its route, in order.
// A retry answers as the call it followed did: the error of its reason, or
// the reply cut at the limit; joined holds the parts a continuation
// already gave, which the recorded (joined) reply repeats.
type recordedModel struct {
	route    string
	attempts map[string][]attempt
	joined   string
	halt     *budgetHalt
}

func (m *recordedModel) Call(ctx context.Context, _ llm.Request) (llm.Reply, error) {
	list := m.attempts[m.route]
	if len(list) == 0 {
		if m.halt != nil && m.halt.sentence != "" {
			return llm.Reply{}, &budget.Refusal{Sentence: m.halt.sentence}
		}
		return llm.Reply{}, fmt.Errorf("%w: replay: no recorded model call on route %s", llm.ErrPermanent, m.route)
	}
	a := list[0]
	m.attempts[m.route] = list[1:]
	if r := a.retry; r != nil {
		switch r.Reason {
		case events.RetryLength, events.RetryContinue:
			if r.Reason == events.RetryContinue {
				m.joined += r.Text
			}
			return llm.Reply{Text: r.Text, Finish: llm.FinishLength, CostUSD: r.CostUSD,
				Usage: llm.Usage{Input: r.InputTokens, Output: r.OutputTokens}}, nil
		case events.RetryRateLimited:
			return llm.Reply{}, recordedRetry{msg: r.Error, kind: llm.ErrRateLimited}
		case events.RetryTooLong:
			return llm.Reply{}, recordedRetry{msg: r.Error, kind: llm.ErrContextTooLong}
		}
		return llm.Reply{}, recordedRetry{msg: r.Error, kind: llm.ErrUnavailable}
	}
	if a.reply == nil || a.reply.Error != "" {
		msg := a.err
		if a.reply != nil {
			msg = a.reply.Error
		}
		return llm.Reply{}, recordedError(msg)
	}
	text := strings.TrimPrefix(a.reply.Text, m.joined)
	m.joined = ""
	rep := llm.Reply{Text: text, CostUSD: a.reply.CostUSD, Usage: llm.Usage{Input: a.reply.InputTokens, Output: a.reply.OutputTokens}}
	for _, c := range a.reply.ToolCalls {
		rep.ToolCalls = append(rep.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)})
	}
	return rep, nil
}

// recordedError reads exactly as the recorded failure did. It is of no
// class, so the loop does not retry it (the retries the run made are
// model_retried attempts) and falls back the same way.
type recordedError string

func (e recordedError) Error() string { return string(e) }

// recordedRetry is a recorded failure that the run retried: of its class.
type recordedRetry struct {
	msg  string
	kind error
}

func (e recordedRetry) Error() string { return e.msg }
func (e recordedRetry) Unwrap() error { return e.kind }

// replayed is the tool a replay uses in t's place: the loop's tools that
// only talk to the owner as they are, delegate and every other tool
// answering as recorded.
func replayed(t tools.Tool, rec *record) tools.Tool {
	switch t.(type) {
	case delegateTool:
		return recordedDelegate{recorded: rec.delegated}
	case toolSearch:
		return recordedSearch{recorded: rec.answered}
	case toolScript:
		return recordedScript{recorded: rec.answered, stop: rec.stop}
	case turnTool:
		return t
	}
	return &recordedTool{Tool: t, results: rec.results[t.Def().Name], rec: rec}
}

// record is what a replay answers with: the recorded results by tool, the
// delegate results and every result by call id.
type record struct {
	results   map[string][]*events.ToolCompleted
	delegated map[string]*events.ToolCompleted
	answered  map[string]*events.ToolCompleted
	// passed are the calls that went past the gate's check: started, or
	// asked about.
	passed map[string]bool
	stop   *replayStop
}

// replayStop cuts the replayed pass where the owner's stop cut a call
// while it ran: the recorded call answers as the stop left it (what it
// had printed), its pass is cancelled with ErrStopped as Worker.Stop
// did, and the loop records the call stopped and closes the run in the
// next pass, as it did live. The recorded run_stop_requested is fed
// before the call's result, where it was stored.
type replayStop struct{ cancel context.CancelCauseFunc }

// cut answers a call whose recorded result the stop made; false when
// the stop made no result of rec.
func (s *replayStop) cut(rec *events.ToolCompleted) (tools.Result, error, bool) {
	if rec.Outcome != "stopped" || s.cancel == nil {
		return tools.Result{}, nil, false
	}
	out := strings.TrimSuffix(rec.Output, " The delegated agent was stopped too.")
	if out == stoppedRunning {
		out = ""
	} else if o, ok := strings.CutSuffix(out, "\n\n["+stoppedRunning+"]"); ok {
		out = o
	} else {
		return tools.Result{}, nil, false // stopped before it ran: the loop says so
	}
	s.cancel(ErrStopped)
	return tools.Result{Output: out, IsError: true}, ErrStopped, true
}

// recordedSearch answers tool_search as recorded: what it found and
// declared (its meta), which the state folds as it did; no server is
// listed again.
type recordedSearch struct {
	toolSearch
	recorded map[string]*events.ToolCompleted
}

func (r recordedSearch) answer(_ context.Context, _ *Turn, c *toolCall) (tools.Result, error) {
	rec, ok := r.recorded[c.ID]
	if !ok {
		return tools.Result{Output: "The harness has no recorded result for this tool_search call.", IsError: true}, nil
	}
	return tools.Result{Output: rec.Output, IsError: rec.IsError, Meta: rec.Meta}, nil
}

// recordedScript answers tool_script as recorded: its nested calls are
// not made again (nested_call records no result text); the recorded
// nested_call events are fed where they were stored, so the run's
// nesting count folds as it did.
type recordedScript struct {
	toolScript
	recorded map[string]*events.ToolCompleted
	stop     *replayStop
}

func (r recordedScript) answer(_ context.Context, _ *Turn, c *toolCall) (tools.Result, error) {
	rec, ok := r.recorded[c.ID]
	if !ok {
		return tools.Result{Output: "The harness has no recorded result for this tool_script call.", IsError: true}, nil
	}
	if res, err, cut := r.stop.cut(rec); cut {
		return res, err
	}
	return tools.Result{Output: rec.Output, IsError: rec.IsError, Meta: rec.Meta}, nil
}

// recordedMCP is the MCP set of a replayed conversation: the tools its
// searches declared (tool_search's meta "declared"), gated as recorded,
// answering with the recorded results.
func recordedMCP(envs []events.Envelope, rec *record) MCP {
	set := mcpRecord{}
	for _, env := range envs {
		if env.Type != events.TypeToolCompleted {
			continue
		}
		e, err := env.Decode()
		if err != nil {
			continue
		}
		tc := e.(*events.ToolCompleted)
		if tc.Tool != ToolSearchTool || tc.Meta["declared"] == nil {
			continue
		}
		b, _ := json.Marshal(tc.Meta["declared"])
		var list []DeclaredTool
		if json.Unmarshal(b, &list) != nil {
			continue
		}
		for _, d := range list {
			if _, seen := set[d.Name]; !seen {
				set[d.Name] = recordedRemote{&recordedTool{Tool: declaredMCP{d}, results: rec.results[d.Name], rec: rec}, declaredMCP{d}}
			}
		}
	}
	return set
}

// mcpRecord is recordedMCP's set, by tool name.
type mcpRecord map[string]recordedRemote

// recordedRemote is a recorded MCP tool: gated and answering as recorded,
// described to tool_search and the approval card as its server did.
type recordedRemote struct {
	*recordedTool
	declaredMCP
}

func (r recordedRemote) Def() tools.Def { return r.declaredMCP.Def() }
func (r recordedRemote) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	return r.recordedTool.Run(ctx, env, args)
}
func (r recordedRemote) NeedsApproval() bool { return r.declaredMCP.NeedsApproval() }
func (r recordedRemote) ReadOnly() bool      { return r.declaredMCP.ReadOnly() }
func (r recordedRemote) AskWhen(env tools.Env, args json.RawMessage) string {
	return r.declaredMCP.AskWhen(env, args)
}

func (m mcpRecord) Tools(_ context.Context, servers []string) ([]tools.Tool, []error) {
	var out []tools.Tool
	for _, t := range m {
		if slices.Contains(servers, t.d.Server) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b tools.Tool) int { return strings.Compare(a.Def().Name, b.Def().Name) })
	return out, nil
}

func (m mcpRecord) Lookup(ctx context.Context, servers []string, name string) (tools.Tool, bool) {
	t, ok := m[name]
	if !ok || !slices.Contains(servers, t.d.Server) {
		return nil, false
	}
	return t, true
}

// declaredMCP is an MCP tool as tool_search recorded it; it never runs
// (recordedTool answers for it).
type declaredMCP struct{ d DeclaredTool }

func (t declaredMCP) Def() tools.Def {
	return tools.Def{Name: t.d.Name, Description: t.d.Description, Params: t.d.Params}
}
func (t declaredMCP) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Result{}, errors.New("replay: a recorded MCP tool does not run")
}
func (t declaredMCP) NeedsApproval() bool                       { return t.d.NeedsApproval }
func (t declaredMCP) ReadOnly() bool                            { return t.d.ReadOnly }
func (t declaredMCP) AskWhen(tools.Env, json.RawMessage) string { return t.d.Ask }
func (t declaredMCP) Server() string                            { return t.d.Server }
func (t declaredMCP) Remote() string                            { return t.d.Remote }
func (t declaredMCP) ReadOnlyHint() bool                        { return t.d.Hint }
func (t declaredMCP) Approval() string                          { return t.d.Approval }
func (t declaredMCP) About() string                             { return t.d.About }

// recordedDelegate answers delegate calls as recorded: refused, or called
// and answered by its child; no child runs again.
type recordedDelegate struct {
	delegateTool
	recorded map[string]*events.ToolCompleted
}

const noRecordedDelegate = "The harness has no recorded result for this delegate call."

func (r recordedDelegate) vet(_ *Turn, c events.ToolCallRequest) (text, outcome string, refused bool) {
	if _, ok := delegateArgsOf(c.Arguments); !ok {
		return delegateUsage, "", true
	}
	rec, ok := r.recorded[c.ID]
	switch {
	case !ok:
		return noRecordedDelegate, "blocked", true
	case rec.Delegate == nil: // refused when it was recorded
		return rec.Output, rec.Outcome, true
	}
	return "", "", false
}

func (r recordedDelegate) answer(_ context.Context, _ *Turn, c *toolCall) (tools.Result, error) {
	rec, ok := r.recorded[c.ID]
	if !ok {
		c.outcome = "blocked"
		return tools.Result{Output: noRecordedDelegate, IsError: true}, nil
	}
	c.delegate, c.outcome = rec.Delegate, rec.Outcome
	return tools.Result{Output: rec.Output, IsError: rec.IsError}, nil
}

// recordedTool keeps a real tool's description and gate behaviour but
// answers with the recorded result: nothing is executed.
type recordedTool struct {
	tools.Tool
	results []*events.ToolCompleted
	rec     *record
}

func (r *recordedTool) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	if len(r.results) == 0 {
		return tools.Result{}, fmt.Errorf("replay: %s ran more often than recorded", r.Def().Name)
	}
	res := r.results[0]
	r.results = r.results[1:]
	if out, err, cut := r.rec.stop.cut(res); cut {
		return out, err
	}
	out := tools.Result{Output: res.Output, IsError: res.IsError, Meta: res.Meta, Canvas: res.Canvas}
	for _, p := range res.Parts { // kept already: replayed as references
		out.Parts = append(out.Parts, tools.Part{Kind: p.Kind, Text: p.Text, MIME: p.MIME, Path: p.Path})
	}
	return out, nil
}

func (r *recordedTool) NeedsApproval() bool { return tools.NeedsApproval(r.Tool) }
func (r *recordedTool) ReadOnly() bool      { return tools.ReadOnly(r.Tool) }
func (r *recordedTool) AskWhen(env tools.Env, args json.RawMessage) string {
	return tools.AskReason(r.Tool, env, args)
}
func (r *recordedTool) AllowWhen(env tools.Env, args json.RawMessage) bool {
	return tools.Routine(r.Tool, env, args)
}

// checkedAsRecorded is a replayed tool: it answers a call's Check as
// the call's Check answered when it was recorded.
type checkedAsRecorded interface {
	checkAsRecorded(env tools.Env, c events.ToolCallRequest) error
}

// checkAsRecorded refuses the call its Check refused when recorded
// (refused_by check), with the recorded words, and lets every other call
// through to the gate: a Check may read live state (a page's outline,
// the wall's allowed addresses) that a replay does not have. A recording
// older than refused_by says no more than "blocked" before the gate:
// there the tool's own Check is asked, and refuses only with the
// recorded words.
func (r *recordedTool) checkAsRecorded(env tools.Env, c events.ToolCallRequest) error {
	rec := r.rec.answered[c.ID]
	switch {
	case rec == nil || rec.Outcome != "blocked" || r.rec.passed[c.ID]:
		return nil
	case rec.RefusedBy == events.RefusedByCheck:
		return errors.New(rec.Output)
	}
	if err := tools.Check(r.Tool, env, c.Arguments); err != nil && err.Error() == rec.Output {
		return err
	}
	return nil
}

func belongs(env events.Envelope, runID string) bool {
	var probe struct {
		RunID string `json:"run_id"`
	}
	json.Unmarshal(env.Data, &probe)
	return probe.RunID == runID || probe.RunID == ""
}

func stepOf(env events.Envelope) int {
	var probe struct {
		Step int `json:"step"`
	}
	json.Unmarshal(env.Data, &probe)
	return probe.Step
}

// volatile fields differ between a run and its replay without meaning
// anything: timings and where spilled text went.
var volatile = []string{"latency_ms", "duration_ms", "expires_at", "spill_path", "truncated", "wait_ms"}

func normalized(env events.Envelope) map[string]any {
	var m map[string]any
	json.Unmarshal(env.Data, &m)
	for _, k := range volatile {
		delete(m, k)
	}
	// The system prompt a step recorded is the files as they were then (and
	// recorded only when it changed): a replay reads today's, and compares
	// the decisions, as before model_called recorded it.
	if env.Type == events.TypeModelCalled {
		delete(m, "system")
	}
	// A replay keeps no compacted result: where the run kept it is no
	// decision.
	if rs, ok := m["results"].([]any); ok {
		for _, r := range rs {
			if r, ok := r.(map[string]any); ok {
				delete(r, "spill_path")
			}
		}
	}
	// A replayed image is the recorded file: its size is not read again.
	if parts, ok := m["parts"].([]any); ok {
		for _, p := range parts {
			if p, ok := p.(map[string]any); ok {
				delete(p, "bytes")
			}
		}
	}
	return m
}

func sameEvent(want, got events.Envelope) bool {
	if want.Type != got.Type || want.V != got.V {
		return false
	}
	w, g := normalized(want), normalized(got)
	if _, ok := w["purpose"]; !ok && want.Type == events.TypeModelCalled {
		delete(g, "purpose") // recorded before model calls had a purpose
	}
	if _, ok := w["refused_by"]; !ok && want.Type == events.TypeToolCompleted {
		delete(g, "refused_by") // recorded before results said who refused
	}
	return reflect.DeepEqual(w, g)
}

func describe(env events.Envelope) string {
	b, _ := json.Marshal(normalized(env))
	return env.Type + " " + string(b)
}

// Write prints the report for the owner, as crew replay shows it: a line
// per identical event, then the first divergence with both sides, or that
// the run replayed identically. Diverged says which.
func (r *ReplayReport) Write(w io.Writer) (diverged bool) {
	for _, l := range r.Lines {
		if l.OK {
			fmt.Fprintf(w, "%4d  step %-3d %-20s ok\n", l.Index, l.Step, l.Type)
		}
	}
	if d := r.Diverged; d != nil {
		fmt.Fprintf(w, "%4d  step %-3d %-20s DIVERGED\n      expected: %s\n      got:      %s\n", d.Index, d.Step, d.Type, d.Expected, d.Got)
		return true
	}
	fmt.Fprintf(w, "run %s of %s replayed: %d events identical, no tool run, no network\n", r.RunID, r.Conversation, len(r.Lines))
	return false
}
