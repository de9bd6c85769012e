package web

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools/frame"
	"github.com/my-agent-crew/crew/tools/image"
	"github.com/my-agent-crew/crew/ui"
)

// chatView lays a conversation's chat projection out as the owner reads
// it: messages, and each tool call as one card holding its result; md
// renders model text.
func chatView(h projections.ChatHead, items []projections.ChatItem, md func(string) string) []ui.Item {
	var out []ui.Item
	for i, it := range items {
		if v, ok := chatSlot(h, i, it, md); ok {
			out = append(out, v)
		}
	}
	return append(out, chatWaiting(h)...)
}

// chatSlot is item i of the chat as the page shows it (Slot i+1); false
// when it shows nothing there (a question the question box asks).
func chatSlot(h projections.ChatHead, i int, it projections.ChatItem, md func(string) string) (ui.Item, bool) {
	var v ui.Item
	switch it.Kind {
	case projections.ChatUser:
		if it.Note {
			v = ui.Item{Kind: ui.ItemNote, Text: chatUserText(it)}
		} else {
			v = chatUser(h.Conversation, it)
		}
	case projections.ChatReply:
		v = ui.Item{Kind: ui.ItemAssistant, Text: it.Text, HTML: md(it.Text), Stopped: it.Stopped}
	case projections.ChatShown:
		v = ui.Item{Kind: ui.ItemAssistant, Text: it.Text, HTML: md(it.Text), Interrupted: it.Then}
	case projections.ChatCall:
		waiting := ""
		if len(h.Approvals) > 0 {
			waiting = h.Approvals[0].CallID
		}
		var ok bool
		if v, ok = chatCall(h, it, waiting, md); !ok {
			return ui.Item{}, false
		}
	default:
		return ui.Item{}, false
	}
	v.Slot = i + 1
	return v, true
}

// chatWaiting are the messages after the chat's items: those a stop
// dropped, never answered, and the queue.
func chatWaiting(h projections.ChatHead) []ui.Item {
	var out []ui.Item
	for _, d := range h.Dropped {
		it := chatUser(h.Conversation, d.Item)
		it.Dropped, it.Notes, it.Canvas = true, "", ""
		out = append(out, it)
	}
	for i, q := range h.Queued {
		it := chatUser(h.Conversation, q.Item)
		it.Notes, it.Canvas = "", ""
		if it.Queued = h.OpenRun != ""; it.Queued {
			it.QueueN = i + 1 // DELETE /api/conversations/{id}/queue/{n}
		}
		out = append(out, it)
	}
	return out
}

// chatUser is a user message's bubble.
func chatUser(conv string, it projections.ChatItem) ui.Item {
	v := ui.Item{Kind: ui.ItemUser, Text: chatUserText(it), Notes: it.Notes, Team: it.Team != nil || it.TeamFlag,
		Task: it.Task != nil || it.TaskFlag, Canvas: it.Canvas}
	v.Images, v.Files = attachmentViews(conv, it.Attachments)
	return v
}

// chatUserText is what a user message's bubble says: the owner's words
// (attachments named when there are none), a team delivery or a task's
// notification as the model reads them.
func chatUserText(it projections.ChatItem) string {
	switch {
	case it.Said != "":
		return it.Said
	case it.Task != nil:
		return frame.TaskText(it.Task)
	case it.Team != nil:
		text := frame.TeamText(it.Team)
		if it.Notes != "" {
			text = frame.Framed(&events.TurnNotes{Text: it.Notes}, "") + text
		}
		return text
	}
	return attachedText(it.Text, it.Attachments)
}

// attachedText is a message's text, or the files it came with when it has
// none (as the model reads them).
func attachedText(text string, files []string) string {
	if strings.TrimSpace(text) != "" || len(files) == 0 {
		return text
	}
	lines := make([]string, len(files))
	for i, f := range files {
		kind := "file"
		if image.IsImage(f) {
			kind = "photo"
		}
		lines[i] = fmt.Sprintf("[%s: %s]", kind, f)
	}
	return strings.Join(lines, "\n")
}

// chatCall is a tool call's card: a delegate's pinned result, a settled
// question, or a tool card with its status; false when the question box
// shows it instead.
func chatCall(h projections.ChatHead, it projections.ChatItem, waiting string, md func(string) string) (ui.Item, bool) {
	c, r := *it.Call, it.Result
	if d := chatDelegate(h.Conversation, c, r, md); d != nil {
		return ui.Item{Kind: ui.ItemDelegate, Delegate: d}, true
	}
	if c.Name == view.AskUserTool && h.Parent == "" {
		if r != nil && !strings.HasPrefix(r.Output, "Your question was shown to the owner.") {
			return ui.Item{Kind: ui.ItemQuestion, Question: chatQuestion(c, r)}, true
		}
		if r == nil && len(h.Questions) > 0 && h.Questions[0].CallID == c.ID {
			return ui.Item{}, false // the question box shows it
		}
	}
	card := &ui.ToolCard{CallID: c.ID, Tool: c.Name, Todo: todoLines(c.Name, c.Arguments)}
	card.Args, card.Blocks = readable(c.Arguments)
	if r != nil {
		card.Output, card.IsError, card.Outcome = r.Output, r.IsError, r.Outcome
		card.Page = resultPage(h.Conversation, r.Meta, r.Parts)
		card.Canvas = chatCanvas(r)
		card.Nested, card.Sizes = scriptContext(r.Meta)
	} else {
		card.Running, card.Waiting = c.ID != waiting, c.ID == waiting
		for _, n := range it.Nested {
			card.Nested = append(card.Nested, nestedLine(n.N, n.Tool, n.IsError, n.Chars, n.DurationMS, n.CostUSD))
		}
	}
	return ui.Item{Kind: ui.ItemTool, Tool: card}, true
}

// chatQuestion is a settled ask_user call: its question and answer.
func chatQuestion(c events.ToolCallRequest, r *projections.ChatResult) *ui.QuestionItem {
	var a struct {
		Question string `json:"question"`
	}
	json.Unmarshal(c.Arguments, &a)
	q := &ui.QuestionItem{CallID: c.ID, Question: a.Question}
	switch r.Outcome {
	case "expired":
		q.Expired = true
	case "":
		q.Answer = r.Output
	default:
		q.Refused = r.Output
	}
	return q
}

// chatDelegate pins a delegate call: running, or answered by its child. A
// refused call (no child) is an ordinary tool card: nil.
func chatDelegate(conv string, c events.ToolCallRequest, r *projections.ChatResult, md func(string) string) *ui.DelegateCard {
	if c.Name != view.DelegateTool {
		return nil
	}
	var args struct{ Agent, Task string }
	json.Unmarshal(c.Arguments, &args)
	d := &ui.DelegateCard{CallID: c.ID, Agent: args.Agent, Task: args.Task, Conversation: view.ChildID(conv, c.ID), Status: "running"}
	switch {
	case r != nil && r.Delegate == nil:
		return nil
	case r == nil:
		return d
	}
	d.Agent, d.Conversation, d.Status = r.Delegate.Agent, r.Delegate.Conversation, r.Delegate.Status
	d.Answer, d.HTML = r.Output, md(r.Output)
	d.Cost = "cost unknown"
	if r.Delegate.CostUSD != nil {
		d.Cost = fmt.Sprintf("$%.4f", *r.Delegate.CostUSD)
	}
	return d
}

// chatCanvas is the card of a canvas write's result, nil for a read or a
// refusal.
func chatCanvas(r *projections.ChatResult) *ui.CanvasCard {
	c := r.Canvas
	if c == nil || c.Op == "" || r.IsError {
		return nil
	}
	return &ui.CanvasCard{Artifact: c.Artifact, Title: c.Title, Kind: c.Kind, Verb: canvasVerbs[c.Op], Version: c.Version}
}
