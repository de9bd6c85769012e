package llm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/tmc/langchaingo/llms"
)

var _ llm.Model = llm.Echo{}

func TestEchoRepliesLastUserTextForFree(t *testing.T) {
	m, err := llm.NewProviders(llm.Config{}).Langchain(llm.Route{Provider: "fake", Model: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "sys"),
		llms.TextParts(llms.ChatMessageTypeHuman, "first"),
		llms.TextParts(llms.ChatMessageTypeAI, "echo: first"),
		llms.TextParts(llms.ChatMessageTypeHuman, "xin chào"),
	}
	var deltas deltaLog
	resp, err := m.GenerateContent(t.Context(), msgs, llm.WithDeltas(deltas.add))
	if err != nil {
		t.Fatal(err)
	}
	ch := choice(t, resp)
	if ch.Content != "echo: xin chào" || len(ch.ToolCalls) != 0 {
		t.Errorf("choice %+v", ch)
	}
	var streamed string
	for _, d := range deltas.all() {
		streamed += d.Text
	}
	if streamed != ch.Content || len(deltas.all()) < 2 {
		t.Errorf("deltas %+v do not stream the reply in pieces", deltas.all())
	}
	if cost, ok := ch.GenerationInfo["CostUSD"].(float64); !ok || cost != 0 {
		t.Errorf("CostUSD %v, want a known 0", ch.GenerationInfo["CostUSD"])
	}
	if ch.GenerationInfo["PromptTokens"] != 0 || ch.GenerationInfo["CompletionTokens"] != 0 {
		t.Errorf("usage %v", ch.GenerationInfo)
	}
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "turn.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestScriptErrorsNameFileLineCol(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"syntax", "- text: \"open\n- text: b\n", ":1:"},
		{"not a list", "text: hi\n", ":1:5: want a list of replies"},
		{"empty", "", ":1:1: script has no replies"},
		{"unknown field", "- text: a\n- txt: b\n", ":2:3: unknown field \"txt\""},
		{"nothing to say", "- delay: 1s\n", ":1:"},
		{"bad delay", "- text: a\n  delay: soon\n", ":2:10: delay \"soon\""},
		{"tool call without name", "- tool_calls:\n    - arguments: {a: 1}\n", ":2:"},
		{"tool call unknown key", "- tool_calls:\n    - name: x\n      args: {}\n", ":3:7:"},
		{"usage unknown key", "- text: a\n  usage: {input: 1, tokens: 2}\n", ":2:"},
		{"bad status", "- error: 200\n", ":1:10: error: status 200"},
		{"two documents", "- text: a\n---\n- text: b\n", ":2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := llm.ParseScript("turn.yaml", []byte(tt.body))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.HasPrefix(err.Error(), "turn.yaml:") || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line with %q", err, tt.want)
			}
		})
	}
	// Through the provider: the path is named and relative paths resolve
	// against ScriptDir.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("- nope: 1\n"), 0o600)
	_, err := llm.NewProviders(llm.Config{ScriptDir: dir}).Model(llm.Route{Provider: "fake", Model: "script:bad.yaml"})
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "bad.yaml")+":1:3:") {
		t.Errorf("error %v", err)
	}
}

func TestScriptPlaysEntriesInOrder(t *testing.T) {
	path := writeScript(t, `
- text: "Let me write that."
  tool_calls:
    - name: workspace_write
      arguments: {path: a.txt, content: hi}
      id: call_w
    - name: progress_note
      arguments: '{"text": "writing"}'
  usage: {input: 10, output: 5, cost_usd: 0.001}
- error: 429
- delay: 200ms
  text: done
  usage: {input: 3, output: 1, cost_unknown: true}
- error: context_too_long
- text: "partial"
  error: 503
- error: "the model is overloaded"
`)
	m, err := llm.LoadScript(path)
	if err != nil {
		t.Fatal(err)
	}
	var slept sleeps
	m.Sleep = slept.sleep
	ctx := t.Context()

	// 1: text and two tool calls, streamed.
	var deltas deltaLog
	resp, err := m.GenerateContent(ctx, human("write a.txt"), llm.WithDeltas(deltas.add))
	if err != nil {
		t.Fatal(err)
	}
	ch := choice(t, resp)
	if ch.Content != "Let me write that." || len(ch.ToolCalls) != 2 {
		t.Fatalf("call 1: %+v", ch)
	}
	w, note := ch.ToolCalls[0], ch.ToolCalls[1]
	if w.ID != "call_w" || w.FunctionCall.Name != "workspace_write" || w.FunctionCall.Arguments != `{"content":"hi","path":"a.txt"}` {
		t.Errorf("call 1 tool 0: %s", jsonOf(t, w))
	}
	if note.ID == "" || note.FunctionCall.Arguments != `{"text": "writing"}` {
		t.Errorf("call 1 tool 1: %s", jsonOf(t, note))
	}
	gi := ch.GenerationInfo
	if gi["PromptTokens"] != 10 || gi["CompletionTokens"] != 5 || gi["CostUSD"] != 0.001 {
		t.Errorf("call 1 usage %v", gi)
	}
	var text string
	args := map[int]string{}
	for _, d := range deltas.all() {
		text += d.Text
		args[d.ToolCallIndex] += d.ArgumentsDelta
	}
	if text != ch.Content || args[0] != w.FunctionCall.Arguments || args[1] != note.FunctionCall.Arguments {
		t.Errorf("deltas do not add up: text %q args %v", text, args)
	}

	// Default ids are a function of the input: same messages, same id.
	again, _ := llm.ParseScript(path, mustRead(t, path))
	resp2, _ := again.GenerateContent(ctx, human("write a.txt"))
	if id := choice(t, resp2).ToolCalls[1].ID; id != note.ID {
		t.Errorf("default id %q then %q for the same input", note.ID, id)
	}

	// 2 and 3: a 429 absorbed by Call, then the delayed reply.
	rep, err := llm.CallSleeping(ctx, m, ask("more"), func(context.Context, time.Duration) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if rep.Text != "done" {
		t.Errorf("call 3 content %q", rep.Text)
	}
	if rep.CostUSD != nil {
		t.Errorf("cost_unknown reply has CostUSD %v", *rep.CostUSD)
	}
	if !reflect.DeepEqual(slept.got, []time.Duration{200 * time.Millisecond}) {
		t.Errorf("delays %v, want [200ms]", slept.got)
	}

	// 4: context too long.
	if _, err := m.GenerateContent(ctx, human("x")); !errors.Is(err, llm.ErrContextTooLong) {
		t.Errorf("call 4: %v", err)
	}
	// 5: text shown, then the failure.
	deltas = deltaLog{}
	_, err = m.GenerateContent(ctx, human("x"), llm.WithDeltas(deltas.add))
	if !errors.Is(err, llm.ErrUnavailable) || len(deltas.all()) == 0 {
		t.Errorf("call 5: %v after %d deltas", err, len(deltas.all()))
	}
	// 6: a message, classified.
	if _, err := m.GenerateContent(ctx, human("x")); !errors.Is(err, llm.ErrUnavailable) || !strings.Contains(err.Error(), "overloaded") {
		t.Errorf("call 6: %v", err)
	}
	// 7: past the end.
	_, err = m.GenerateContent(ctx, human("x"))
	if err == nil || !strings.Contains(err.Error(), path+": call 7: script has only 6 replies") {
		t.Errorf("call 7: %v", err)
	}
	if m.Calls() != 7 {
		t.Errorf("Calls() = %d", m.Calls())
	}
}

func TestScriptDelayHonoursContext(t *testing.T) {
	m, err := llm.ParseScript("s.yaml", []byte("- text: late\n  delay: 1h\n- text: next\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.GenerateContent(ctx, human("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	// The cancelled call still consumed its entry.
	resp, err := m.GenerateContent(t.Context(), human("x"))
	if err != nil || choice(t, resp).Content != "next" {
		t.Errorf("after a cancelled call: %v, %v", resp, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFreshScriptResumesFromHistory(t *testing.T) {
	body := []byte("- tool_calls: [{name: shell_run, id: c1}]\n- error: 500\n- text: second\n- text: third\n")
	toolTurn := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "run it"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "shell_run", Arguments: "{}"}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "shell_run", Content: "interrupted"}}},
	}
	tests := []struct {
		name  string
		msgs  []llms.MessageContent
		first string // what the first call answers: text, or the error's class
	}{
		{"new conversation", human("run it"), "tool"},
		{"after one assistant message", toolTurn, "error"},
		{"after two", append(append([]llms.MessageContent{}, toolTurn...), llms.TextParts(llms.ChatMessageTypeAI, "second"), llms.TextParts(llms.ChatMessageTypeHuman, "again")), "third"},
		{"past the end", append(append([]llms.MessageContent{}, toolTurn...), llms.TextParts(llms.ChatMessageTypeAI, "a"), llms.TextParts(llms.ChatMessageTypeAI, "b")), "exhausted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := llm.ParseScript("s.yaml", body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.GenerateContent(t.Context(), tt.msgs)
			got := ""
			switch {
			case err != nil && strings.Contains(err.Error(), "script has only"):
				got = "exhausted"
			case errors.Is(err, llm.ErrUnavailable):
				got = "error"
			case err != nil:
				t.Fatal(err)
			case len(choice(t, resp).ToolCalls) > 0:
				got = "tool"
			default:
				got = choice(t, resp).Content
			}
			if got != tt.first {
				t.Errorf("first call answered %q, want %q", got, tt.first)
			}
			// Later calls just advance: the history only places the start.
			if tt.first == "tool" {
				if _, err := m.GenerateContent(t.Context(), toolTurn); !errors.Is(err, llm.ErrUnavailable) {
					t.Errorf("second call: %v, want the scripted 500", err)
				}
			}
		})
	}
}
