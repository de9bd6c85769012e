package events_test

import (
	"encoding/json"

	"github.com/my-agent-crew/crew/events"
)

// Samples of a fork's events, as loop.ForkEvents writes them.
func init() {
	from := events.ForkOrigin{Conversation: "web-20261130", RunID: "r1", Step: 2}
	samples[events.TypeConversationForked] = []events.Event{&events.ConversationForked{RunID: "r2", Route: "openrouter:a/b", From: from,
		State: json.RawMessage(`{"conversation":"fork-1","messages":[{"role":"user","text":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","name":"shell_run","arguments":{}}]},{"role":"tool","text":"ok","tool_call_id":"c1","tool":"shell_run"}],"open_run":"r2","step":1}`)}}
	samples[events.TypeConversationOpened] = append(samples[events.TypeConversationOpened],
		&events.ConversationOpened{Agent: "master", Channel: "web", Title: "Fork of plan at step 2", ForkedFrom: &from})
	samples[events.TypeRunStarted] = append(samples[events.TypeRunStarted], &events.RunStarted{RunID: "r2", Agent: "master", Trigger: events.TriggerFork})
}
