package loop

import (
	"encoding/json"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/refusal"
)

// Forks (R-X-2, R-OBS-3): a recorded run is copied at step N into a new
// conversation that continues live on another route. The fork holds the
// conversation's state as step N's model request read it — folded from the
// original's events up to that request (its compaction included), so the
// fork's first request is built by the same code (history, compaction view,
// canvas notes, attachments, tool declarations with the MCP tools loaded)
// and reads the same messages. Its system prompt is the one step N sent,
// as the original's model_called recorded it (conversation_forked
// system, State.Pin); the fork's later steps read the agent's files anew,
// as at every step (R-HOME-4). The tool declarations are the agent's
// tools as configured now, with the MCP tools the state had loaded. The
// new model then answers step N in place of the recorded reply and the
// run goes on normally. Nothing is written to the original.

// Fork errors, for the callers to map (the API's 400/404).
var (
	ErrForkRun  = refusal.ErrForkRun
	ErrForkStep = refusal.ErrForkStep
	// ErrForkRefused: the run cannot be forked (a delegated child's or a
	// teammate's conversation, whose place in its parent or team a copy
	// cannot take).
	ErrForkRefused = refusal.ErrForkRefused
	// ErrForkRoute: the route is not one this home can call.
	ErrForkRoute = refusal.ErrForkRoute
)

// ForkSpec is what the caller chooses of a fork: its conversation and run
// ids, the route it continues on and its title.
type ForkSpec struct {
	Conversation, RunID, Route, Title string
}

// ForkEvents returns the events that open the fork of run runID at step
// (1-based) of the conversation whose events are envs, as read from the
// log: conversation_opened (forked_from), run_started (trigger fork),
// conversation_forked (the state).
func ForkEvents(envs []events.Envelope, runID string, step int, spec ForkSpec) ([]events.Event, error) {
	if len(envs) == 0 {
		return nil, fmt.Errorf("run %s: %w", runID, ErrForkRun)
	}
	orig := events.ScopeOf(envs[0].Subject).ID()
	cut, first, steps, started := -1, 0, 0, false
	for i, env := range envs {
		e, err := env.Decode()
		if err != nil {
			return nil, fmt.Errorf("fork: %s seq %d: %w", env.Subject, env.Seq, err)
		}
		if r, ok := e.(*events.RunStarted); ok && r.RunID == runID {
			started = true
		}
		if id, ok := events.RunOf(e); !ok || id != runID {
			continue
		}
		n, request := requestStep(e)
		if !request {
			continue
		}
		steps = max(steps, n)
		if first == 0 || n < first { // a fork's run starts at the step it was copied at
			first = n
		}
		if n == step && cut < 0 {
			cut = i
		}
	}
	switch {
	case !started:
		return nil, fmt.Errorf("run %s of conversation %s: %w", runID, orig, ErrForkRun)
	case steps == 0:
		return nil, fmt.Errorf("run %s made no model call: nothing to fork: %w", runID, ErrForkStep)
	case step < first || step > steps || cut < 0:
		return nil, fmt.Errorf("run %s has steps %d to %d, not %d: %w", runID, first, steps, step, ErrForkStep)
	}
	st := &State{Conversation: orig}
	for _, env := range envs[:cut] {
		if err := st.Apply(env); err != nil {
			return nil, fmt.Errorf("fork: %w", err)
		}
	}
	switch {
	case st.OpenRun != runID:
		return nil, fmt.Errorf("run %s is not open at step %d: %w", runID, step, ErrForkStep)
	case st.RootID != "" || st.ParentConversation != "":
		return nil, fmt.Errorf("run %s is a delegated child's, answering its parent's call: fork the parent's run instead: %w", runID, ErrForkRefused)
	case st.Team != "":
		return nil, fmt.Errorf("run %s is a teammate's, seated on team %s: %w", runID, st.Team, ErrForkRefused)
	}
	system, err := stepSystem(envs, runID, step)
	if err != nil {
		return nil, err
	}
	state, err := json.Marshal(forkedState(st, spec, step))
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	from := events.ForkOrigin{Conversation: orig, RunID: runID, Step: step}
	return []events.Event{
		&events.ConversationOpened{Agent: st.Agent, Channel: st.Channel, Title: spec.Title, Autonomous: st.Autonomous,
			ApprovalTTLSeconds: st.ApprovalTTL, ForkedFrom: &from},
		&events.RunStarted{RunID: spec.RunID, Agent: st.Agent, Trigger: events.TriggerFork},
		&events.ConversationForked{RunID: spec.RunID, Route: spec.Route, From: from, State: state, System: system},
	}, nil
}

// stepSystem is the system prompt step's request of run runID sent: the
// latest one a turn's model_called recorded at or before that step's
// model_called. Empty when the step has no model_called or nothing before
// it recorded one (a recording older than ModelCalled.System).
func stepSystem(envs []events.Envelope, runID string, step int) (string, error) {
	var system string
	for _, env := range envs {
		if env.Type != events.TypeModelCalled {
			continue
		}
		e, err := env.Decode()
		if err != nil {
			return "", fmt.Errorf("fork: %s seq %d: %w", env.Subject, env.Seq, err)
		}
		mc := e.(*events.ModelCalled)
		if !mc.InTurn() {
			continue
		}
		if mc.System != "" {
			system = mc.System
		}
		if mc.RunID == runID && mc.Step == step {
			return system, nil
		}
	}
	return "", nil
}

// requestStep is the step of an event that shows a turn's model request
// was made (its reply, a retry, a fallback), the first of which marks
// where the step's request was sent: what came before it (the step's
// compaction too) is what the request read.
func requestStep(e events.Event) (int, bool) {
	switch e := e.(type) {
	case *events.ModelCalled:
		return e.Step, e.InTurn() && e.Step > 0
	case *events.ModelRetried:
		return e.Step, e.Step > 0
	case *events.RouteFallback:
		// A vision move comes before the step's compaction: the request
		// is made after it.
		return e.Step, e.Step > 0 && !e.Vision()
	}
	return 0, false
}

// forkedState is st as the fork starts from it: the history and what the
// request was built from, with the fork's run open before step. Nothing of
// what the original had waiting (queued messages, steers not yet applied,
// approvals) or granted ("always" approvals are asked afresh), and no
// spending yet: the fork has spent nothing.
func forkedState(st *State, spec ForkSpec, step int) *State {
	return &State{
		Conversation: spec.Conversation,
		Messages:     st.Messages,
		Origin:       Origin{Agent: st.Agent, Channel: st.Channel, Autonomous: st.Autonomous, ApprovalTTL: st.ApprovalTTL},
		Running:      Running{OpenRun: spec.RunID, Step: step - 1, RunPrompt: st.RunPrompt, PromptChecked: true, RunFrom: st.RunFrom},
		Untrusted:    st.Untrusted,
		NotesTold:    st.NotesTold,
		CanvasMarks:  st.CanvasMarks,
		Guarding:     st.Guarding,
		MCPLoaded:    st.MCPLoaded,
		Compacting:   Compacting{Compaction: st.Compaction},
		Scripting:    Scripting{NestedCalls: st.NestedCalls},
		Delegation:   Delegation{Delegations: st.Delegations},
		ForkPin:      ForkPin{Route: spec.Route},
	}
}

// applyFork folds conversation_forked: the state it carries, with the
// fork's run open and its route.
func (s *State) applyFork(e *events.ConversationForked) error {
	var f State
	if err := json.Unmarshal(e.State, &f); err != nil {
		return fmt.Errorf("conversation_forked: state: %w", err)
	}
	conv, seq := s.Conversation, s.Seq
	*s = *forkedState(&f, ForkSpec{Conversation: conv, RunID: e.RunID, Route: e.Route}, e.From.Step)
	s.Seq = seq
	if e.System != "" {
		s.Pin = &SystemPin{RunID: e.RunID, Step: e.From.Step, System: e.System}
	}
	return nil
}

// ForkPin is the fork fold (R-X-2): Route is the one route a fork runs
// on, replacing the agent's routes; Pin is the system prompt the
// original's step sent, for the fork's run to send again at that step,
// until that step is answered. Both come from conversation_forked.
type ForkPin struct {
	Route string     `json:"route,omitempty"`
	Pin   *SystemPin `json:"pin,omitempty"`
}

func (f *ForkPin) apply(env events.Envelope, _ foldOn) {
	if e, ok := decoded(env).(*events.ModelCalled); ok && e.InTurn() {
		if p := f.Pin; p != nil && e.RunID == p.RunID && e.Step == p.Step && e.Error == "" {
			f.Pin = nil // the pinned step is answered
		}
	}
}
