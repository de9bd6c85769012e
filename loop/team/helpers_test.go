package team_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/team"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/shell/shelltest"
)

// call is one tool call a scripted reply makes.
type call struct{ name, args string }

// reply is what the scripted model answers.
type reply struct {
	text  string
	calls []call
}

func say(text string) reply           { return reply{text: text} }
func use(name string, args any) reply { return reply{calls: []call{{name, mustJSON(args)}}} }
func uses(calls ...call) reply        { return reply{calls: calls} }
func tc(name string, args any) call   { return call{name, mustJSON(args)} }
func mustJSON(v any) string           { b, _ := json.Marshal(v); return string(b) }
func args(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// brain answers one model call of one seat: who is asking (the member's
// name, or "lead"), the last user message and the messages so far.
type brain func(who, last string, msgs []llm.Message) reply

// model is the scripted model every agent uses; it tells the seats apart
// by their system prompt.
type model struct {
	mu    sync.Mutex
	brain brain
	seen  map[string][][]llm.Message // by seat
	tools map[string][]string        // the tools offered at the seat's last call
	n     int
}

var _ llm.Model = (*model)(nil)

func seatOf(msgs []llm.Message) string {
	sys := text(msgs[0])
	const mark = "# Your team\n\nYou are "
	if i := strings.Index(sys, mark); i >= 0 {
		rest := sys[i+len(mark):]
		name, _, _ := strings.Cut(rest, ",")
		return name
	}
	return team.Lead
}

func text(m llm.Message) string { return m.Text() }

func (m *model) Call(ctx context.Context, req llm.Request) (llm.Reply, error) {
	msgs := req.Messages
	who := seatOf(msgs)
	var offered []string
	for _, t := range req.Tools {
		offered = append(offered, t.Name)
	}
	m.mu.Lock()
	m.seen[who] = append(m.seen[who], msgs)
	m.tools[who] = offered
	m.n++
	n := m.n
	m.mu.Unlock()
	last := text(msgs[len(msgs)-1])
	r := m.brain(who, last, msgs)
	rep := llm.Reply{Text: r.text, Usage: llm.Usage{Input: 10, Output: 5}, CostUSD: new(0.0)}
	for i, c := range r.calls {
		rep.ToolCalls = append(rep.ToolCalls, llm.ToolCall{ID: fmt.Sprintf("call_%d_%d", n, i), Name: c.name, Arguments: c.args})
	}
	return rep, nil
}

func (m *model) calls(who string) [][]llm.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.seen[who])
}

func (m *model) offered(who string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.tools[who])
}

// harness is a crew with a lead (master) and a coder profile, a real log,
// a real worker and the team runtime.
type harness struct {
	t      *testing.T
	log    *events.Log
	agents map[string]loop.Agent
	model  *model
	reg    *tools.Registry
	convs  *loop.Convs
	w      *loop.Worker
	rt     *team.Runtime
	ws     string // the lead's workspace
	home   string // the crew home the tools are told of; "" none
	// wrap, when set, is what the runtime reads conversations through;
	// logger is the runtime's (nil: none). Both are taken by start.
	wrap   func(team.Convs) team.Convs
	logger *slog.Logger
}

const leadConv = "web-1"

func newHarness(t *testing.T, b brain) *harness {
	t.Helper()
	_, log := eventstest.Start(t)
	h := &harness{t: t, log: log, agents: map[string]loop.Agent{}, model: &model{brain: b, seen: map[string][][]llm.Message{}, tools: map[string][]string{}}}
	for _, id := range []string{"master", "coder"} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("You are the "+id+" persona."), 0o600)
		ws := filepath.Join(dir, "workspace")
		os.MkdirAll(ws, 0o700)
		names := []string{"workspace_read", "workspace_write", "workspace_edit", "workspace_list", "shell_run"}
		if id == "master" {
			names = append(names, team.LeadTools...)
			h.ws = ws
		}
		h.agents[id] = loop.Agent{ID: id, Dir: dir, Workspace: ws, Routes: []string{"fake:team"}, Tools: names,
			MaxSteps: 12, CostCapUSD: 1, ToolOutputChars: 8000, ApprovalTTL: 10 * time.Minute}
	}
	h.start()
	t.Cleanup(h.dump)
	return h
}

// start starts a worker and a runtime: a fresh process, with cold state.
func (h *harness) start() {
	t := h.t
	h.convs = loop.NewConvs(h.log, nil)
	box := shelltest.New(t) // a fresh process's own
	var convs team.Convs = h.convs
	if h.wrap != nil {
		convs = h.wrap(convs)
	}
	h.rt = team.New(team.Config{Log: h.log, Convs: convs, Crew: loop.Agents(h.agents), Sandbox: box, Logger: h.logger})
	reg, err := tools.New(append(tools.Builtins(tools.Services{Sandbox: box}), team.Tools(h.rt)...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.reg = reg
	deps := loop.Deps{
		Models:   llm.ModelsFunc(func(string) (llm.Model, error) { return h.model, nil }),
		Tools:    reg,
		Clock:    noWaits{},
		Services: loop.Services{Teams: h.rt, Sandbox: box},
		HomeDir:  h.home,
		Crew:     loop.Agents(h.agents),
	}
	w, err := loop.StartWorker(t.Context(), loop.WorkerConfig{Log: h.log, Convs: h.convs, Deps: deps, SweepEvery: -1,
		Recover: func(context.Context) ([]string, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	h.w = w
	h.rt.Bind(w)
	h.rt.Run(t.Context())
	t.Cleanup(h.stop)
}

// noWaits is the wall clock whose retry waits return at once.
type noWaits struct{ loop.WallClock }

func (noWaits) Sleep(context.Context, time.Duration) error { return nil }

func (h *harness) stop() {
	h.rt.Close()
	h.w.Close()
}

// autonomous makes the master's conversations autonomous: gated calls run
// unasked unless they carry an ask reason. Call before the first message.
func (h *harness) autonomous() {
	a := h.agents["master"]
	a.Autonomous = true
	h.agents["master"] = a
}

// send is the owner's message to the lead's conversation.
func (h *harness) send(text string) {
	h.t.Helper()
	conv, err := h.convs.Get(context.Background(), leadConv)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := conv.Append(context.Background(), func(st *loop.State) ([]events.Event, error) {
		var evs []events.Event
		if st.Agent == "" {
			evs = append(evs, &events.ConversationOpened{Agent: "master", Channel: "web"})
		}
		return append(evs, &events.MessageReceived{Channel: "web", Text: text}), nil
	}); err != nil {
		h.t.Fatal(err)
	}
	h.w.Kick(leadConv)
}

// approve decides the lead's pending approval.
func (h *harness) approve() {
	h.t.Helper()
	var id string
	eventstest.Eventually(h.t, "an approval", func() bool {
		st := h.state(leadConv)
		if a := st.PendingApproval(); a != nil {
			id = a.ID
			return true
		}
		return false
	})
	if _, err := h.w.Decide(context.Background(), leadConv, id, true, false, "web"); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) state(conv string) *loop.State {
	h.t.Helper()
	st, err := loop.LoadState(context.Background(), h.log, nil, conv)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// quiet waits until the worker and the runtime have nothing to do.
func (h *harness) quiet(what string, cond func() bool) {
	h.t.Helper()
	eventstest.Eventually(h.t, what, func() bool { return cond() && h.w.Idle() && h.rt.Idle() })
}

func (h *harness) board() *team.Board {
	h.t.Helper()
	tm, err := team.Open(context.Background(), h.log, leadConv)
	if err != nil {
		h.t.Fatal(err)
	}
	var b team.Board
	tm.View(context.Background(), func(bd *team.Board, _ *team.Mailboxes) { b = *bd })
	return &b
}

func (h *harness) mail(member string) []team.Mail {
	h.t.Helper()
	tm, err := team.Open(context.Background(), h.log, leadConv)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []team.Mail
	tm.View(context.Background(), func(_ *team.Board, mb *team.Mailboxes) { out = slices.Clone(mb.Box[member]) })
	return out
}

// results are the tool results of a conversation, by tool.
func (h *harness) results(conv, tool string) []*events.ToolCompleted {
	h.t.Helper()
	envs, err := h.log.ReadAll(context.Background(), events.Conv(conv).Filter(), 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*events.ToolCompleted
	for _, env := range envs {
		e, err := env.Decode()
		if err != nil {
			h.t.Fatal(err)
		}
		if tc, ok := e.(*events.ToolCompleted); ok && (tool == "" || tc.Tool == tool) {
			out = append(out, tc)
		}
	}
	return out
}

// asked reports whether conv asked the owner for a call of tool.
func (h *harness) asked(conv, tool string) bool {
	h.t.Helper()
	envs, err := h.log.ReadAll(context.Background(), events.Conv(conv).Filter(), 0)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, env := range envs {
		if e, err := env.Decode(); err == nil {
			if a, ok := e.(*events.ApprovalRequested); ok && a.Tool == tool {
				return true
			}
		}
	}
	return false
}

// lastResult is the output of conv's last call of tool.
func (h *harness) lastResult(conv, tool string) string {
	h.t.Helper()
	rs := h.results(conv, tool)
	if len(rs) == 0 {
		h.t.Fatalf("%s: no %s result", conv, tool)
	}
	return rs[len(rs)-1].Output
}

// taskIDs are the ids create_task returned in the lead's conversation.
func (h *harness) taskIDs() []string {
	var ids []string
	for _, r := range h.results(leadConv, "create_task") {
		id, _, _ := strings.Cut(strings.TrimPrefix(r.Output, "Created "), ":")
		ids = append(ids, id)
	}
	return ids
}

// turns counts the model calls that began with a message matching pred.
func count(msgs [][]llm.Message, pred func(string) bool) int {
	n := 0
	for _, m := range msgs {
		if pred(text(m[len(m)-1])) {
			n++
		}
	}
	return n
}

// dump logs the board and every conversation of the team, on failure.
func (h *harness) dump() {
	if !h.t.Failed() {
		return
	}
	b := h.board()
	for _, id := range b.Order {
		h.t.Logf("task %+v", *b.Tasks[id])
	}
	convs := []string{leadConv}
	for _, n := range b.Roster {
		h.t.Logf("member %+v", *b.Members[n])
		convs = append(convs, b.Members[n].Conversation)
	}
	for _, c := range convs {
		st := h.state(c)
		h.t.Logf("== %s open=%q queued=%d", c, st.OpenRun, len(st.Queued))
		for _, m := range st.Messages {
			h.t.Logf("  %s: %.300q", m.Role, m.Text+fmt.Sprint(m.ToolCalls))
		}
	}
	for _, n := range append([]string{"lead"}, b.Roster...) {
		for _, m := range h.mail(n) {
			h.t.Logf("mail %s←%s %s: %.100q", n, m.From, m.Type, m.Content)
		}
	}
}
