package loop

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/tools"
)

// DelegateTool is the loop tool that runs a child turn on another agent
// (R-DEL).
const DelegateTool = view.DelegateTool

// MaxDelegations is how many delegate calls one conversation may make
// (R-HOME-6).
const MaxDelegations = 8

// DelegateChannel is the channel of a delegated child conversation and of
// its brief.
const DelegateChannel = "delegate"

//go:embed delegate.md
var delegateDescription string

// delegateTool runs a child turn on another agent (R-DEL).
type delegateTool struct{}

func (delegateTool) Def() tools.Def {
	return tools.Def{Name: DelegateTool, Description: strings.TrimSpace(delegateDescription), Default: true,
		Params: json.RawMessage(`{"type":"object","properties":{` +
			`"agent":{"type":"string","description":"id of the agent, as the crew list names it"},` +
			`"task":{"type":"string","description":"the complete brief: the agent knows nothing else"}},` +
			`"required":["agent","task"]}`)}
}

// Run refuses: a delegation needs the turn that waits for it.
func (delegateTool) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Failf("delegate runs only within a turn of the loop; nothing was delegated"), nil
}

func (delegateTool) traits() traits { return traits{resumes: true} }

const delegateUsage = `Not run: delegate needs {"agent": "<agent id>", "task": "<the complete brief>"}, both non-empty.`

func delegateArgsOf(raw json.RawMessage) (delegateArgs, bool) {
	var args delegateArgs
	if err := json.Unmarshal(raw, &args); err != nil || strings.TrimSpace(args.Agent) == "" || strings.TrimSpace(args.Task) == "" {
		return args, false
	}
	args.Agent = strings.TrimSpace(args.Agent)
	return args, true
}

// vet refuses a delegation that may not run: bad arguments, a delegate not
// allowed or unknown, one level deep, no delegations or budget left.
func (delegateTool) vet(t *Turn, c events.ToolCallRequest) (text, outcome string, refused bool) {
	args, ok := delegateArgsOf(c.Arguments)
	if !ok {
		return delegateUsage, "", true
	}
	var why string
	t.conv.View(func(st *State) { why = t.refuseDelegation(st, args.Agent) })
	return why, "blocked", why != ""
}

// answer opens the child conversation (unless a call resumed after a
// restart opened it already), has the worker run it and waits for its run
// to end; the child's answer is the call's result. Stopping the server
// leaves the call open, and the next start resumes the wait: the child
// carries on where it was, nothing runs twice.
func (delegateTool) answer(ctx context.Context, t *Turn, c *toolCall) (tools.Result, error) {
	args, ok := delegateArgsOf(c.Arguments)
	if !ok {
		return tools.Result{Output: delegateUsage, IsError: true}, nil
	}
	if t.worker == nil {
		// Recorded before, not runnable here: say so rather than hang.
		c.outcome = "blocked"
		return tools.Result{Output: "The harness cannot run delegated agents here; the task was not done.", IsError: true}, nil
	}
	child, err := t.openChild(ctx, c.runID, c.ID, args)
	if err != nil {
		return tools.Result{}, err
	}
	t.worker.Kick(child.ID())
	// The child runs on its own pass, to which this one lends its slot
	// of turns_in_flight while it waits; an approval the child waits for
	// only makes this wait longer.
	takeBack := lendSlot(ctx)
	err = child.Wait(ctx, func(st *State) bool { return st.DelegateEnd != nil || st.Closed })
	takeBack()
	if err != nil {
		return tools.Result{}, err
	}
	var end RunEnd
	var runID string
	child.View(func(st *State) {
		runID = st.DelegateRun
		if st.DelegateEnd != nil {
			end = *st.DelegateEnd
		} else {
			end = RunEnd{Status: events.RunFailed, Error: "its conversation was closed before it answered",
				CostUSD: st.CostUSD, UnknownCostCalls: st.UnknownCostCalls}
		}
	})
	full, isErr := delegateAnswer(args.Agent, end)
	full = Unframe(full) // the child's words are data here (R-SEC-1)
	c.delegate = &events.DelegateResult{Agent: args.Agent, Conversation: child.ID(), RunID: runID, Status: end.Status, UnknownCostCalls: end.UnknownCostCalls}
	if end.UnknownCostCalls == 0 || end.CostUSD > 0 {
		cost := end.CostUSD
		c.delegate.CostUSD = &cost
	}
	return tools.Result{Output: full, IsError: isErr}, nil
}

// ChildID is the conversation a delegate call opens. It is derived from the
// parent conversation and the call id, so a call resumed after a restart
// finds the child it opened.
func ChildID(parent, callID string) string { return view.ChildID(parent, callID) }

type delegateArgs struct {
	Agent string `json:"agent"`
	Task  string `json:"task"`
}

// refuseDelegation says why a new delegate call may not run, or "".
func (t *Turn) refuseDelegation(st *State, agentID string) string {
	if t.worker == nil || t.deps.Crew == nil {
		return "Not run: delegation is not available here. Do the task yourself."
	}
	if st.ParentConversation != "" || st.RootID != "" {
		return "Not run: this task was delegated to you, and delegation goes one level deep only. Do it yourself; if another agent should help, say so in your answer."
	}
	whom := "You may delegate to any other agent of the crew."
	if len(t.agent.Delegates) > 0 {
		whom = "You may delegate to: " + strings.Join(t.agent.Delegates, ", ") + "."
	}
	switch _, known := t.deps.Crew.Agent(agentID); {
	case agentID == t.agent.ID:
		return fmt.Sprintf("Not run: you cannot delegate to yourself (%s). %s", agentID, whom)
	case len(t.agent.Delegates) > 0 && !slices.Contains(t.agent.Delegates, agentID):
		return fmt.Sprintf("Not run: you may not delegate to %q. %s", agentID, whom)
	case !known:
		return fmt.Sprintf("Not run: there is no agent %q in the crew. %s", agentID, whom)
	}
	if st.Delegations >= MaxDelegations {
		return fmt.Sprintf("Not run: this conversation has already made %d delegations, the most allowed. Finish the work yourself.", MaxDelegations)
	}
	if budget := st.Budget(t.agent.CostCapUSD); budget > 0 && st.CostUSD >= budget {
		return fmt.Sprintf("Not run: no budget left: this conversation has spent $%.4f of its $%.4f cost cap.", st.CostUSD, budget)
	}
	return ""
}

// openChild opens the child conversation of a delegate call unless it is
// open already: the brief is its only message.
func (t *Turn) openChild(ctx context.Context, runID, callID string, args delegateArgs) (*Conv, error) {
	var opened events.ConversationOpened
	t.conv.View(func(st *State) {
		opened = events.ConversationOpened{
			Agent: args.Agent, Channel: DelegateChannel, Title: titleOf(args.Task),
			RootID: st.RootID, RootSource: st.Channel,
			ParentRunID: runID, ParentConversation: t.conv.ID(), ParentCallID: callID,
			Autonomous: true, ApprovalTTLSeconds: st.ApprovalTTL,
		}
		if opened.RootID == "" {
			opened.RootID = t.conv.ID()
		}
		if opened.ApprovalTTLSeconds <= 0 {
			opened.ApprovalTTLSeconds = int(t.agent.ApprovalTTL / time.Second)
		}
		// The child may spend what the parent has left, and no more than
		// its own cap.
		own := 0.0
		if a, ok := t.deps.Crew.Agent(args.Agent); ok {
			own = a.CostCapUSD
		}
		capUSD := own
		if budget := st.Budget(t.agent.CostCapUSD); budget > 0 {
			left := max(budget-st.CostUSD, 0)
			if capUSD <= 0 || left < capUSD {
				capUSD = left
			}
			opened.CostCapUSD = &capUSD
		} else if own > 0 {
			opened.CostCapUSD = &capUSD
		}
	})
	child, err := t.worker.cfg.Convs.Get(ctx, ChildID(t.conv.ID(), callID))
	if err != nil {
		return nil, err
	}
	_, err = child.Append(ctx, func(st *State) ([]events.Event, error) {
		brief := &events.MessageReceived{Channel: DelegateChannel, From: t.agent.ID, Text: args.Task}
		switch {
		case st.Agent == "":
			o := opened
			return []events.Event{&o, brief}, nil
		case !st.Closed && st.OpenRun == "" && st.DelegateRun == "" && len(st.Queued) == 0 && len(st.Messages) == 0:
			// The two are separate publishes: a crash or a shutdown between
			// them left the child opened without its brief, and nothing
			// would ever run it.
			return []events.Event{brief}, nil
		}
		return nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("delegate to %s: %w", args.Agent, err)
	}
	return child, nil
}

// delegated marks the first run of a delegated conversation: it names the
// parent run and was triggered by the delegation.
func delegated(st *State, e *events.RunStarted) *events.RunStarted {
	if st.ParentRunID != "" && st.DelegateRun == "" {
		e.ParentRunID, e.Trigger = st.ParentRunID, "delegate"
	}
	return e
}

// runEnd is how the delegated run ended, read when its run_finished is
// applied: the last text it wrote and what it asked, if it asked.
func (s *State) runEnd(e *events.RunFinished) *RunEnd {
	end := &RunEnd{Status: e.Status, Reason: e.Reason, Error: e.Error, CostUSD: s.CostUSD, UnknownCostCalls: s.UnknownCostCalls}
	last := true
	for i := len(s.Messages) - 1; i >= 0 && end.Text == ""; i-- {
		m := s.Messages[i]
		if m.Role != RoleAssistant {
			continue
		}
		if last && e.Reason == "ask_user" {
			for _, c := range m.ToolCalls {
				var q struct {
					Question string `json:"question"`
				}
				if c.Name == AskUserTool && json.Unmarshal(c.Arguments, &q) == nil {
					end.Question = q.Question
				}
			}
		}
		last = false
		end.Text = m.Text
	}
	return end
}

// delegateAnswer is the delegate call's result: the child's answer, or
// what stopped it and whatever it wrote.
func delegateAnswer(agent string, end RunEnd) (text string, isError bool) {
	wrote := "It wrote nothing."
	if end.Text != "" {
		wrote = "What it wrote last:\n\n" + end.Text
	}
	switch {
	case end.Status == events.RunDone && end.Reason == "ask_user":
		return fmt.Sprintf("%s stopped to ask the owner a question instead of finishing: %q. Answer it in a new delegate call, or ask the owner yourself. %s", agent, end.Question, wrote), true
	case end.Status == events.RunDone && end.Text != "":
		return end.Text, false
	case end.Status == events.RunDone:
		return agent + " finished without writing an answer.", true
	case end.Status == events.RunHalted:
		return fmt.Sprintf("%s was stopped before it finished (%s). %s", agent, cmp.Or(end.Reason, "halted"), wrote), true
	default:
		why := end.Error
		if why == "" {
			why = cmp.Or(end.Reason, "unknown error")
		}
		return fmt.Sprintf("%s failed: %s. %s", agent, why, wrote), true
	}
}

// titleOf is a conversation title from a brief: its first line, cut.
func titleOf(task string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(task), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) <= 80 {
		return line
	}
	return strings.TrimSpace(string([]rune(line)[:79])) + "…"
}

// Delegation is the delegation fold (R-DEL): a child conversation names
// its root and parent; CostCap replaces the agent's cap when set.
// Delegations counts delegate calls made here (R-HOME-6: at most 8).
type Delegation struct {
	RootID             string   `json:"root_id,omitempty"`
	ParentConversation string   `json:"parent_conversation,omitempty"`
	ParentCallID       string   `json:"parent_call_id,omitempty"`
	ParentRunID        string   `json:"parent_run_id,omitempty"`
	CostCap            *float64 `json:"cost_cap,omitempty"`
	Delegations        int      `json:"delegations,omitempty"`
	// RootSource is the channel of a delegated conversation's root.
	RootSource string `json:"root_source,omitempty"`
	// DelegateRun is the run the delegation started here (its run_started
	// names the parent run); DelegateEnd is how it ended, once it has.
	DelegateRun string  `json:"delegate_run,omitempty"`
	DelegateEnd *RunEnd `json:"delegate_end,omitempty"`
}

func (d *Delegation) apply(env events.Envelope, on foldOn) {
	switch e := decoded(env).(type) {
	case *events.ConversationOpened:
		d.RootID, d.ParentConversation, d.ParentCallID, d.CostCap = e.RootID, e.ParentConversation, e.ParentCallID, e.CostCapUSD
		d.ParentRunID, d.RootSource = e.ParentRunID, e.RootSource
	case *events.RunStarted:
		if d.ParentRunID != "" && d.DelegateRun == "" { // a delegated conversation's first run
			d.DelegateRun = e.RunID
		}
	case *events.RunFinished:
		if on.end != nil && e.RunID == d.DelegateRun && d.DelegateEnd == nil {
			end := *on.end
			d.DelegateEnd = &end
		}
	case *events.ToolCalled:
		if e.Tool == DelegateTool {
			d.Delegations++
		}
	case *events.NestedCall: // a script's delegation counts as a direct one
		if e.Delegate != nil {
			d.Delegations++
		}
	}
}

// Budget is the conversation's cost cap: the agent's, or the smaller one a
// delegated child was given. Zero means none.
func (d *Delegation) Budget(agentCap float64) float64 {
	if d.CostCap != nil && (agentCap <= 0 || *d.CostCap < agentCap) {
		return *d.CostCap
	}
	return agentCap
}
