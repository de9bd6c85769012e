package web

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/ui"
	"go.etcd.io/bbolt"
)

// The chat projection shows what the turn's state showed the page: after
// every event of a history that holds every kind of item and status
// (notes, attachments, approval waiting then denied, a steer, a queued
// message dropped by a stop, delegate pinned, question hidden then
// settled, script nesting, interrupted and stopped replies, a stopped
// task's notice, team mail, a hook's withheld words) and of a fork made
// from it, chatView over projections.GetChat gives the items chatItems
// gave over loop.State.
func TestChatProjectionShowsWhatTheStateShowed(t *testing.T) {
	ctx := t.Context()
	_, log := eventstest.Start(t)
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "p.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	runner, err := projections.Open(ctx, log, db, nil, projections.All()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close(context.Background()) })
	convs := loop.NewConvs(log, nil)
	md := func(s string) string { return "<p>" + s + "</p>" }

	compare := func(id string, what string) {
		t.Helper()
		conv, err := convs.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var want []ui.Item
		var seq uint64
		var asked string
		conv.View(func(st *loop.State) { want, seq, asked = chatItems(st, md), st.Seq, askedQuestion(st) })
		if err := runner.WaitFor(ctx, seq); err != nil {
			t.Fatal(err)
		}
		head, items, err := projections.GetChat(db, id)
		if err != nil {
			t.Fatal(err)
		}
		got := chatView(head, items, md)
		for i := range got {
			got[i].Slot = 0 // the page before the projection had no slots
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %s:\n got  %s\n want %s", what, dump(got), dump(want))
		}
		if head.Seq != seq {
			t.Fatalf("after %s: head seq %d, state %d", what, head.Seq, seq)
		}
		if head.Asked != asked {
			t.Fatalf("after %s: asked %q, state %q", what, head.Asked, asked)
		}
	}
	var lastID string
	add := func(id string, evs ...events.Event) {
		t.Helper()
		conv, err := convs.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			stored, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) { return []events.Event{e}, nil })
			if err != nil {
				t.Fatal(err)
			}
			lastID = stored[0].ID
			compare(id, fmt.Sprintf("%T", e))
		}
	}
	expires := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	call := func(id, name, args string) events.ToolCallRequest {
		return events.ToolCallRequest{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	cost := 0.0123

	add("p1", &events.ConversationOpened{Agent: "master", Channel: "web"},
		&events.MessageReceived{Channel: "web", Text: "hello", TurnNotes: &events.TurnNotes{Text: "remember the dog"}, CanvasNotes: &events.CanvasNotes{Text: "plan.md changed"}},
		&events.MessageReceived{Channel: "web", Attachments: []string{"inbox/a.png", "notes.txt"}},
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "a", Model: "m", Text: "let me look", ToolCalls: []events.ToolCallRequest{
			call("c1", "workspace_read", `{"path":"notes.md"}`), call("c2", "shell_run", `{"command":"ls -la"}`),
			call("c3", "todo_write", `{"items":[{"text":"one","done":true},{"text":"two"}]}`), call("c4", "delegate", `{"agent":"chef","task":"cook"}`)}},
		&events.ToolCalled{RunID: "r1", Step: 1, CallID: "c1", Tool: "workspace_read"},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "c1", Tool: "workspace_read", Output: "the notes"},
		&events.ApprovalRequested{ApprovalID: "a1", RunID: "r1", Step: 1, CallID: "c2", Tool: "shell_run", Arguments: json.RawMessage(`{"command":"ls -la"}`), ExpiresAt: expires},
	)
	add("p1", &events.SteerReceived{Channel: "web", Text: "also this"})
	steer := lastID
	add("p1", &events.MessageReceived{Channel: "web", Text: "and later"})
	queued := lastID
	add("p1", &events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionDenied},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "c2", Tool: "shell_run", Output: "denied by the owner", IsError: true, Outcome: "denied"},
		&events.SteersApplied{RunID: "r1", Step: 1, SteerIDs: []string{steer}},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "c3", Tool: "todo_write", Output: "ok"},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "c4", Tool: "delegate", Output: "**dinner**",
			Delegate: &events.DelegateResult{Agent: "chef", Conversation: "p1-d-x", RunID: "rc", Status: events.RunDone, CostUSD: &cost}},
		&events.ModelRetried{RunID: "r1", Step: 2, Route: "a", Reason: "5xx", Attempt: 2, Error: "503", Text: "half a thou", Interrupted: true},
		&events.ModelCalled{RunID: "r1", Step: 2, Route: "a", Model: "m", ToolCalls: []events.ToolCallRequest{call("q1", "ask_user", `{"question":"which colour?"}`)}},
		&events.QuestionAsked{QuestionID: "qq1", RunID: "r1", Step: 2, CallID: "q1", Question: "which colour?", Choices: []string{"blue", "red"}, ExpiresAt: expires},
		&events.QuestionAnswered{QuestionID: "qq1", Answer: "blue", Channel: "web"},
		&events.ToolCompleted{RunID: "r1", Step: 2, CallID: "q1", Tool: "ask_user", Output: "blue"},
		&events.ModelCalled{RunID: "r1", Step: 3, Route: "a", Model: "m", ToolCalls: []events.ToolCallRequest{call("s1", "tool_script", `{"code":"x"}`), call("w1", "web_fetch", `{"url":"https://example.com"}`)}},
		&events.NestedCall{RunID: "r1", Step: 3, CallID: "s1", N: 2, Kind: "tool", Tool: "workspace_read", Chars: 10, DurationMS: 3},
		&events.NestedCall{RunID: "r1", Step: 3, CallID: "s1", N: 1, Kind: "llm", Tool: "llm", Chars: 20, DurationMS: 4, CostUSD: &cost, IsError: true},
		&events.ToolCompleted{RunID: "r1", Step: 3, CallID: "s1", Tool: "tool_script", Output: "done",
			Meta: map[string]any{"calls": []map[string]any{{"n": 1, "tool": "llm", "chars": 20}}, "received_chars": 30, "printed_chars": 4}},
		&events.ToolCompleted{RunID: "r1", Step: 3, CallID: "w1", Tool: "web_fetch", Output: "page",
			Meta: map[string]any{"url": "https://example.com", "title": "Example"}},
		&events.GuardReminded{RunID: "r1", Step: 3, Tool: "workspace_read", Count: 3, Text: "[Harness reminder] you called workspace_read 3 times"},
		&events.ModelCalled{RunID: "r1", Step: 4, Route: "a", Model: "m", Text: "half of it", Stopped: true, Error: "stopped"},
		&events.RunStopRequested{RunID: "r1", By: "owner", Scope: "all", Dropped: []string{queued}},
		&events.TaskNotification{TaskID: "t1", Command: "sleep 100", Output: "", StoppedBy: "owner"},
		&events.RunFinished{RunID: "r1", Status: events.RunHalted, Reason: "stopped"},
		&events.MessageReceived{Channel: "team", Team: &events.TeamDelivery{Items: []events.TeamItem{{From: "lead", Type: "plain", Content: "go on"}}}},
		&events.TaskNotification{TaskID: "t2", Command: "make", ExitCode: 2, Output: "boom"},
		&events.MessageReceived{Channel: "web", Text: "[Harness reminder] not really"},
		&events.RunStarted{RunID: "r2", Agent: "master", Trigger: "message"},
		&events.RunFinished{RunID: "r2", Status: events.RunHalted, Reason: "hook"},
		&events.MessageReceived{Channel: "web", Text: "again"},
		&events.RunStarted{RunID: "r3", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r3", Step: 1, Route: "a", Model: "m", Text: "I was saying", Error: "502 bad gateway"},
		&events.RouteFallback{RunID: "r3", Step: 1, From: "a", To: "b", Error: "502", Text: "I was", Interrupted: true},
		&events.ModelCalled{RunID: "r3", Step: 1, Route: "b", Model: "m", Text: "an answer", ToolCalls: []events.ToolCallRequest{call("x1", "shell_run", `{"command":"rm -rf /tmp/x"}`)}},
		&events.ApprovalRequested{ApprovalID: "a2", RunID: "r3", Step: 1, CallID: "x1", Tool: "shell_run", Reason: "deletes files", ExpiresAt: expires},
	)

	// A fork of p1 as it stands: its history, its run open.
	p1, err := convs.Get(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	var state json.RawMessage
	p1.View(func(s *loop.State) { state, _ = json.Marshal(s) })
	add("f1", &events.ConversationOpened{Agent: "master", Channel: "web"},
		&events.RunStarted{RunID: "rf", Agent: "master", Trigger: "fork"},
		&events.ConversationForked{RunID: "rf", Route: "b", From: events.ForkOrigin{Conversation: "p1", RunID: "r3", Step: 1}, State: state},
		&events.ModelCalled{RunID: "rf", Step: 1, Route: "b", Model: "m", ToolCalls: []events.ToolCallRequest{call("q2", "ask_user", `{"question":"sure?"}`)}},
		&events.QuestionAsked{QuestionID: "qq2", RunID: "rf", Step: 1, CallID: "q2", Question: "sure?", ExpiresAt: expires},
		&events.QuestionExpired{QuestionID: "qq2"},
		&events.ToolCompleted{RunID: "rf", Step: 1, CallID: "q2", Tool: "ask_user", Output: "nobody answered", Outcome: "expired"},
		&events.RunFinished{RunID: "rf", Status: events.RunDone},
	)
}

func dump(items any) string {
	b, _ := json.Marshal(items)
	return string(b)
}

// What the page showed before the chat projection: its items laid out
// from loop.State, the reference TestChatProjectionShowsWhatTheStateShowed
// holds the projection to.

// chatItems lays the history out as the owner reads it: messages, and each
// tool call as one card holding its result; md renders model text.
func chatItems(st *loop.State, md func(string) string) []ui.Item {
	results := map[string]loop.Message{}
	for _, m := range st.Messages {
		if m.Role == loop.RoleTool {
			results[m.ToolCallID] = m
		}
	}
	waiting := ""
	if a := st.PendingApproval(); a != nil {
		waiting = a.CallID
	}
	var items []ui.Item
	shown := st.Shown
	interrupted := func(before int) {
		for len(shown) > 0 && shown[0].At <= before {
			sh := shown[0]
			shown = shown[1:]
			items = append(items, ui.Item{Kind: ui.ItemAssistant, Text: sh.Text, HTML: md(sh.Text), Interrupted: sh.Then})
		}
	}
	for i, m := range st.Messages {
		interrupted(i)
		switch m.Role {
		case loop.RoleUser:
			if strings.HasPrefix(m.Text, "[Harness reminder]") {
				items = append(items, ui.Item{Kind: ui.ItemNote, Text: m.Text})
				continue
			}
			it := ui.Item{Kind: ui.ItemUser, Text: cmp.Or(m.Said, m.Text), Notes: m.Notes, Team: m.Team, Task: m.Task, Canvas: m.Canvas}
			it.Images, it.Files = attachmentViews(st.Conversation, m.Attachments)
			items = append(items, it)
		case loop.RoleAssistant:
			if m.Text != "" {
				items = append(items, ui.Item{Kind: ui.ItemAssistant, Text: m.Text, HTML: md(m.Text), Stopped: m.Stopped})
			}
			for _, c := range m.ToolCalls {
				if d := delegateCard(st, c, results, md); d != nil {
					items = append(items, ui.Item{Kind: ui.ItemDelegate, Delegate: d})
					continue
				}
				if c.Name == loop.AskUserTool && st.ParentConversation == "" {
					if r, ok := results[c.ID]; ok && !strings.HasPrefix(r.Text, "Your question was shown to the owner.") {
						items = append(items, ui.Item{Kind: ui.ItemQuestion, Question: questionItem(c, r)})
						continue
					}
					if q := st.PendingQuestion(); q != nil && q.CallID == c.ID {
						continue // the question box shows it
					}
				}
				card := &ui.ToolCard{CallID: c.ID, Tool: c.Name, Todo: todoLines(c.Name, c.Arguments)}
				card.Args, card.Blocks = readable(c.Arguments)
				if r, ok := results[c.ID]; ok {
					card.Output, card.IsError, card.Outcome = r.Text, r.IsError, r.Outcome
					card.Page = toolPage(st.Conversation, r)
					card.Canvas = canvasCard(r)
					card.Nested, card.Sizes = scriptContext(r.Meta)
				} else {
					card.Running, card.Waiting = c.ID != waiting, c.ID == waiting
					for _, n := range st.Nesting[c.ID] {
						card.Nested = append(card.Nested, nestedLine(n.N, n.Tool, n.IsError, n.Chars, n.DurationMS, n.CostUSD))
					}
				}
				items = append(items, ui.Item{Kind: ui.ItemTool, Tool: card})
			}
		}
	}
	interrupted(len(st.Messages))
	for _, d := range st.Dropped { // a stop dropped them: never answered
		it := ui.Item{Kind: ui.ItemUser, Text: cmp.Or(d.Said, d.Text), Dropped: true, Team: d.Team, Task: d.Task}
		it.Images, it.Files = attachmentViews(st.Conversation, d.Attachments)
		items = append(items, it)
	}
	for i, q := range st.Queued {
		it := ui.Item{Kind: ui.ItemUser, Text: cmp.Or(q.Said, q.Text), Queued: st.OpenRun != "", Team: q.Team, Task: q.Task}
		if it.Queued {
			it.QueueN = i + 1 // DELETE /api/conversations/{id}/queue/{n}
		}
		it.Images, it.Files = attachmentViews(st.Conversation, q.Attachments)
		items = append(items, it)
	}
	return items
}

// questionItem is a settled ask_user call: its question and answer.
func questionItem(c events.ToolCallRequest, r loop.Message) *ui.QuestionItem {
	var a struct {
		Question string `json:"question"`
	}
	json.Unmarshal(c.Arguments, &a)
	q := &ui.QuestionItem{CallID: c.ID, Question: a.Question}
	switch r.Outcome {
	case "expired":
		q.Expired = true
	case "":
		q.Answer = r.Text
	default:
		q.Refused = r.Text
	}
	return q
}

// delegateCard pins a delegate call: running, or answered by its child. A
// refused call (no child) is an ordinary tool card: nil.
func delegateCard(st *loop.State, c events.ToolCallRequest, results map[string]loop.Message, md func(string) string) *ui.DelegateCard {
	if c.Name != loop.DelegateTool {
		return nil
	}
	var args struct{ Agent, Task string }
	json.Unmarshal(c.Arguments, &args)
	d := &ui.DelegateCard{CallID: c.ID, Agent: args.Agent, Task: args.Task, Conversation: loop.ChildID(st.Conversation, c.ID), Status: "running"}
	r, answered := results[c.ID]
	switch {
	case answered && r.Delegate == nil:
		return nil
	case !answered:
		return d
	}
	d.Agent, d.Conversation, d.Status = r.Delegate.Agent, r.Delegate.Conversation, r.Delegate.Status
	d.Answer, d.HTML = r.Text, md(r.Text)
	d.Cost = "cost unknown"
	if r.Delegate.CostUSD != nil {
		d.Cost = fmt.Sprintf("$%.4f", *r.Delegate.CostUSD)
	}
	return d
}

// askedQuestion is what the last model reply asked with ask_user, if it did.
func askedQuestion(st *loop.State) string {
	for i := len(st.Messages) - 1; i >= 0; i-- {
		m := st.Messages[i]
		if m.Role != loop.RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls {
			var q struct {
				Question string `json:"question"`
			}
			if c.Name == "ask_user" && json.Unmarshal(c.Arguments, &q) == nil {
				return q.Question
			}
		}
		return ""
	}
	return ""
}

// canvasCard is the card of a canvas write's result, nil for a read or a
// refusal.
func canvasCard(r loop.Message) *ui.CanvasCard {
	c := r.CanvasRef
	if c == nil || c.Op == "" || r.IsError {
		return nil
	}
	return &ui.CanvasCard{Artifact: c.Artifact, Title: c.Title, Kind: c.Kind, Verb: canvasVerbs[c.Op], Version: c.Version}
}

func toolPage(conv string, r loop.Message) *ui.ToolPage { return resultPage(conv, r.Meta, r.Parts) }
