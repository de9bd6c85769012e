// Package loop runs turns. A turn never keeps the conversation in a mutable
// in-memory list: it rebuilds the model's view (State) from the log — a
// snapshot plus the events after it — and everything it decides becomes an
// event, appended through the conversation's single writer (Conv.Append on
// an injected Appender: the real log, or a memlog.MemLog in a replay).
//
// Sub-packages are the rest of the loop layer: loop/llm (model routes and
// the OpenAI-compatible client), loop/notes (turn notes and the opener),
// loop/summarize and loop/consolidate (model-driven operations that append
// events). loop/crew.go holds the crew as prompts show it (Roster) and the
// kit sub-agents that join it.
package loop
