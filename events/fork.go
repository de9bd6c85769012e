package events

import "encoding/json"

// Forks (R-X-2, R-OBS-3): a run's conversation copied at one step into a
// new conversation that continues live on another route. The fork's log
// starts conversation_opened (with ForkedFrom), run_started (trigger
// "fork"), conversation_forked; the original's log is not written.
const TypeConversationForked = "conversation_forked"

// TriggerFork is the run_started trigger of a fork's run.
const TriggerFork = "fork"

func init() {
	register[ConversationForked]()
}

// ForkOrigin names where a fork was copied from: the conversation, its
// run and the step whose model request the fork answers again.
type ForkOrigin struct {
	Conversation string `json:"conversation"`
	RunID        string `json:"run_id"`
	Step         int    `json:"step"`
}

// ConversationForked carries the history a fork starts from: the
// conversation's state as step From.Step's model request read it (the
// loop's folded State, as JSON: messages, compaction, loaded MCP tools,
// what the turn notes told), with the fork's run open at that step. Route
// is the route the fork's conversation runs on from here. System is the
// system prompt step From.Step's request sent, as recorded on the
// original's model_called; the fork's first request sends it again. Empty
// (a recording made before model_called recorded it): the fork's first
// request reads the agent's files anew.
type ConversationForked struct {
	RunID  string          `json:"run_id"`
	Route  string          `json:"route"`
	From   ForkOrigin      `json:"from"`
	State  json.RawMessage `json:"state"`
	System string          `json:"system,omitempty"`
}

func (*ConversationForked) EventType() string { return TypeConversationForked }
func (*ConversationForked) EventVersion() int { return 1 }
func (e *ConversationForked) runOf() string   { return e.RunID }
