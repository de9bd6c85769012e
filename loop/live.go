package loop

import (
	"encoding/json"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/nats-io/nats.go"
)

// liveStreams redacts one model call's deltas before they are published
// (R-X-6): the text and each tool call's arguments are separate streams,
// each holding back a tail that could be the start of a secret until the
// next piece or flush, the end of the call.
type liveStreams struct {
	publish func(llm.Delta)
	secrets *events.Redactor // the home's
	text    *events.StreamRedactor
	tools   map[int]*liveTool
	order   []int
}

type liveTool struct {
	head  llm.Delta // index, id and name, as last seen
	args  *events.StreamRedactor
	shown bool
}

func newLiveStreams(r *events.Redactor, publish func(llm.Delta)) *liveStreams {
	return &liveStreams{publish: publish, secrets: r, text: r.Stream(), tools: map[int]*liveTool{}}
}

func (l *liveStreams) send(d llm.Delta) {
	if d.Text != "" {
		if text := l.text.Write(d.Text); text != "" {
			l.publish(llm.Delta{Text: text})
		}
	}
	if d.ToolName == "" && d.ToolCallID == "" && d.ArgumentsDelta == "" {
		return
	}
	tl := l.tools[d.ToolCallIndex]
	if tl == nil {
		tl = &liveTool{args: l.secrets.Stream()}
		l.tools[d.ToolCallIndex] = tl
		l.order = append(l.order, d.ToolCallIndex)
	}
	tl.head.ToolCallIndex = d.ToolCallIndex
	if d.ToolCallID != "" {
		tl.head.ToolCallID = d.ToolCallID
	}
	if d.ToolName != "" {
		tl.head.ToolName = d.ToolName
	}
	out := tl.head
	out.ArgumentsDelta = tl.args.Write(d.ArgumentsDelta)
	if out.ArgumentsDelta != "" || !tl.shown {
		tl.shown = true
		l.publish(out)
	}
}

// flush publishes what was held back.
func (l *liveStreams) flush() {
	if text := l.text.Flush(); text != "" {
		l.publish(llm.Delta{Text: text})
	}
	for _, i := range l.order {
		tl := l.tools[i]
		if rest := tl.args.Flush(); rest != "" {
			out := tl.head
			out.ArgumentsDelta = rest
			l.publish(out)
		}
	}
}

// LiveOn publishes a turn's deltas on events.LiveSubject of nc (core
// NATS, not stored) for the SSE feed, as {"run_id", "delta"}: Deps.Live.
// nil without a connection.
func LiveOn(nc *nats.Conn) func(conv, runID string, d llm.Delta) {
	if nc == nil {
		return nil
	}
	return func(conv, runID string, d llm.Delta) {
		b, _ := json.Marshal(map[string]any{"run_id": runID, "delta": d})
		nc.Publish(events.LiveSubject(conv), b)
	}
}
