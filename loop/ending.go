package loop

import (
	"encoding/json"

	"github.com/my-agent-crew/crew/events/view"
)

// Ending is how a run ended, gathered from its events: what the web chat
// and the Telegram gateway tell the owner when a run stops without a
// normal answer (view.Ending: one place for the words, which the web
// gateway renders without importing the loop).
type Ending = view.Ending

// The kinds of an Ending (view's).
const (
	EndFailed      = view.EndFailed
	EndHalted      = view.EndHalted
	EndNoReply     = view.EndNoReply
	EndAsks        = view.EndAsks
	EndStopped     = view.EndStopped
	EndInterrupted = view.EndInterrupted
)

// ArgText is one string argument of a tool call given as text
// (view.ArgText).
type ArgText = view.ArgText

// ReadableArgs lays out tool arguments for a person deciding on them
// (view.ReadableArgs).
func ReadableArgs(raw json.RawMessage) (rest string, texts []ArgText) { return view.ReadableArgs(raw) }

// ToolSource is where tool name comes from, as a card says it
// (view.ToolSource).
func ToolSource(name string) string { return view.ToolSource(name) }
