package llm_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/tmc/langchaingo/llms"
)

func TestClientStreamsText(t *testing.T) {
	s := newChatServer(t, sse(textChunk("Hel"), textChunk("lo, "), textChunk("owner"), finishChunk("stop"), usageChunk(7, 3, "")))
	m := ollama(t, s, llm.Config{})
	var deltas deltaLog
	var streamed []string
	resp, err := m.GenerateContent(t.Context(), human("hi"),
		llm.WithDeltas(deltas.add),
		llms.WithStreamingFunc(func(_ context.Context, b []byte) error { streamed = append(streamed, string(b)); return nil }))
	if err != nil {
		t.Fatal(err)
	}
	ch := choice(t, resp)
	if ch.Content != "Hello, owner" || ch.StopReason != "stop" || len(ch.ToolCalls) != 0 {
		t.Errorf("got content %q stop %q calls %v", ch.Content, ch.StopReason, ch.ToolCalls)
	}
	want := []llm.Delta{{Text: "Hel"}, {Text: "lo, "}, {Text: "owner"}}
	if got := deltas.all(); !reflect.DeepEqual(got, want) {
		t.Errorf("deltas %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(streamed, []string{"Hel", "lo, ", "owner"}) {
		t.Errorf("streaming func got %q", streamed)
	}
	gi := ch.GenerationInfo
	if gi["PromptTokens"] != 7 || gi["CompletionTokens"] != 3 {
		t.Errorf("usage %v, want 7/3 ints", gi)
	}
	if c, ok := gi["CostUSD"]; !ok || c != 0.0 {
		t.Errorf("CostUSD = %v for a local Ollama model, want 0 (free)", gi["CostUSD"])
	}

	req := s.only(t)
	if req.path != "/v1/chat/completions" {
		t.Errorf("path %q", req.path)
	}
	if req.body["stream"] != true || jsonOf(t, req.body["stream_options"]) != `{"include_usage":true}` {
		t.Errorf("request does not stream with usage: %s", req.raw)
	}
	if req.body["model"] != "qwen3:8b" {
		t.Errorf("model %v", req.body["model"])
	}
	for _, key := range []string{"temperature", "usage", "tools", "top_p"} {
		if _, ok := req.body[key]; ok {
			t.Errorf("request has %q though nobody set it: %s", key, req.raw)
		}
	}
	if h := req.header.Get("Authorization"); h != "" {
		t.Errorf("Ollama got Authorization %q", h)
	}
}

func TestClientToolCallsRoundTripWithIDs(t *testing.T) {
	s := newChatServer(t, sse(
		textChunk("Writing it."),
		toolChunk(0, "call_new", "workspace_write", "", false),
		toolChunk(0, "", "", `{"path":"b.txt",`, false),
		toolChunk(0, "", "", `"content":"yo"}`, false),
		finishChunk("tool_calls"),
	))
	m := ollama(t, s, llm.Config{})
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are helpful."),
		llms.TextParts(llms.ChatMessageTypeHuman, "write a.txt"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.ToolCall{ID: "call_old", Type: "function", FunctionCall: &llms.FunctionCall{Name: "workspace_write", Arguments: `{"path":"a.txt"}`}},
		}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "call_old", Name: "workspace_write", Content: "wrote 2 bytes"},
		}},
	}
	tools := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
		Name: "workspace_write", Description: "write a file",
		Parameters: map[string]any{"type": "object"},
	}}}
	var deltas deltaLog
	resp, err := m.GenerateContent(t.Context(), msgs, llms.WithTools(tools), llm.WithDeltas(deltas.add))
	if err != nil {
		t.Fatal(err)
	}
	ch := choice(t, resp)
	wantCalls := []llms.ToolCall{{ID: "call_new", Type: "function", FunctionCall: &llms.FunctionCall{Name: "workspace_write", Arguments: `{"path":"b.txt","content":"yo"}`}}}
	if !reflect.DeepEqual(ch.ToolCalls, wantCalls) {
		t.Errorf("tool calls %s, want %s", jsonOf(t, ch.ToolCalls), jsonOf(t, wantCalls))
	}
	if ch.Content != "Writing it." || ch.StopReason != "tool_calls" {
		t.Errorf("content %q stop %q", ch.Content, ch.StopReason)
	}
	wantDeltas := []llm.Delta{
		{Text: "Writing it."},
		{ToolCallIndex: 0, ToolCallID: "call_new", ToolName: "workspace_write"},
		{ToolCallIndex: 0, ToolCallID: "call_new", ToolName: "workspace_write", ArgumentsDelta: `{"path":"b.txt",`},
		{ToolCallIndex: 0, ToolCallID: "call_new", ToolName: "workspace_write", ArgumentsDelta: `"content":"yo"}`},
	}
	if got := deltas.all(); !reflect.DeepEqual(got, wantDeltas) {
		t.Errorf("deltas\n got %+v\nwant %+v", got, wantDeltas)
	}

	req := s.only(t)
	wantMsgs := `[{"content":"You are helpful.","role":"system"},` +
		`{"content":"write a.txt","role":"user"},` +
		`{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.txt\"}","name":"workspace_write"},"id":"call_old","type":"function"}]},` +
		`{"content":"wrote 2 bytes","role":"tool","tool_call_id":"call_old"}]`
	if got := jsonOf(t, req.body["messages"]); got != wantMsgs {
		t.Errorf("messages\n got %s\nwant %s", got, wantMsgs)
	}
	wantTools := `[{"function":{"description":"write a file","name":"workspace_write","parameters":{"type":"object"}},"type":"function"}]`
	if got := jsonOf(t, req.body["tools"]); got != wantTools {
		t.Errorf("tools\n got %s\nwant %s", got, wantTools)
	}
}

func TestClientParallelToolCallsAssembledByIndex(t *testing.T) {
	a := func(i int, id, name, args string) string { return toolChunk(i, id, name, args, false) }
	tests := []struct {
		name   string
		chunks []string
		want   [][3]string // id, name, arguments
	}{
		{
			name: "interleaved index 0 and 1",
			chunks: []string{
				a(0, "call_a", "workspace_read", ""), a(1, "call_b", "workspace_list", ""),
				a(0, "", "", `{"pa`), a(1, "", "", `{"di`),
				a(0, "", "", `th":"a.txt"}`), a(1, "", "", `r":"."}`),
			},
			want: [][3]string{{"call_a", "workspace_read", `{"path":"a.txt"}`}, {"call_b", "workspace_list", `{"dir":"."}`}},
		},
		{
			name: "type repeated on every delta",
			chunks: []string{
				toolChunk(0, "call_a", "workspace_read", "", true),
				toolChunk(0, "", "", `{"path":`, true),
				toolChunk(0, "", "", `"a.txt"}`, true),
			},
			want: [][3]string{{"call_a", "workspace_read", `{"path":"a.txt"}`}},
		},
		{
			name: "id and name repeated on every delta",
			chunks: []string{
				toolChunk(0, "call_a", "workspace_read", `{"path":`, true),
				toolChunk(0, "call_a", "workspace_read", `"a.txt"}`, true),
			},
			want: [][3]string{{"call_a", "workspace_read", `{"path":"a.txt"}`}},
		},
		{
			name: "one index reused for calls with different ids",
			chunks: []string{
				a(0, "call_a", "workspace_read", `{"path":"a.txt"}`),
				a(0, "call_b", "workspace_read", `{"path":"b.txt"}`),
			},
			want: [][3]string{{"call_a", "workspace_read", `{"path":"a.txt"}`}, {"call_b", "workspace_read", `{"path":"b.txt"}`}},
		},
		{
			name: "no index, whole calls",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[` +
					`{"id":"call_a","type":"function","function":{"name":"x","arguments":"{}"}},` +
					`{"id":"call_b","type":"function","function":{"name":"y","arguments":{"k":1}}}]}}]}`,
			},
			want: [][3]string{{"call_a", "x", `{}`}, {"call_b", "y", `{"k":1}`}},
		},
		{
			name:   "no arguments at all",
			chunks: []string{a(0, "call_a", "progress_note", "")},
			want:   [][3]string{{"call_a", "progress_note", `{}`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newChatServer(t, sse(append(tt.chunks, finishChunk("tool_calls"))...))
			var deltas deltaLog
			resp, err := ollama(t, s, llm.Config{}).GenerateContent(t.Context(), human("go"), llm.WithDeltas(deltas.add))
			if err != nil {
				t.Fatal(err)
			}
			var got [][3]string
			for _, c := range choice(t, resp).ToolCalls {
				got = append(got, [3]string{c.ID, c.FunctionCall.Name, c.FunctionCall.Arguments})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("calls %q, want %q", got, tt.want)
			}
			// Deltas rebuild the same calls, per index.
			rebuilt := map[int]string{}
			for _, d := range deltas.all() {
				if d.Text != "" {
					t.Errorf("text delta %q in a tool-only reply", d.Text)
				}
				rebuilt[d.ToolCallIndex] += d.ArgumentsDelta
			}
			for i, w := range tt.want {
				if w[2] != "{}" && rebuilt[i] != w[2] {
					t.Errorf("deltas of call %d add up to %q, want %q", i, rebuilt[i], w[2])
				}
			}
		})
	}
}

func TestOpenRouterCostAndKey(t *testing.T) {
	s := newChatServer(t, sse(textChunk("ok"), finishChunk("stop"), usageChunk(1000, 20, `,"cost":0.0123`)))
	resp, err := openrouter(t, s).GenerateContent(t.Context(), human("hi"))
	if err != nil {
		t.Fatal(err)
	}
	gi := choice(t, resp).GenerationInfo
	if gi["CostUSD"] != 0.0123 || gi["PromptTokens"] != 1000 || gi["CompletionTokens"] != 20 {
		t.Errorf("generation info %v", gi)
	}
	req := s.only(t)
	if req.path != "/api/v1/chat/completions" {
		t.Errorf("path %q", req.path)
	}
	if got := jsonOf(t, req.body["usage"]); got != `{"include":true}` {
		t.Errorf("usage request %s, want include:true", got)
	}
	if got := req.header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization %q", got)
	}
}

func TestCostFromPriceTable(t *testing.T) {
	s := newChatServer(t, sse(textChunk("ok"), finishChunk("stop"), usageChunk(2000, 500, "")))
	m := ollama(t, s, llm.Config{Catalog: llm.NewCatalog(map[string]llm.ModelOverride{"ollama:qwen3:8b": {InputUSDPerMTok: ptr(1.0), OutputUSDPerMTok: ptr(4.0)}})})
	resp, err := m.GenerateContent(t.Context(), human("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := choice(t, resp).GenerationInfo["CostUSD"], (2000*1.0+500*4.0)/1e6; got != want {
		t.Errorf("CostUSD %v, want %v", got, want)
	}
}

func TestNoUsageMeansNoCostEvenWithPrice(t *testing.T) {
	s := newChatServer(t, sse(textChunk("ok"), finishChunk("stop")))
	m := ollama(t, s, llm.Config{})
	resp, err := m.GenerateContent(t.Context(), human("hi"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"CostUSD", "PromptTokens"} {
		if v, ok := choice(t, resp).GenerationInfo[k]; ok {
			t.Errorf("%s = %v without reported usage", k, v)
		}
	}
}

func TestTemperatureOnlyWhenSet(t *testing.T) {
	ok := sse(textChunk("ok"), finishChunk("stop"))
	s := newChatServer(t, ok, ok, ok)
	m := ollama(t, s, llm.Config{})
	for _, opts := range [][]llms.CallOption{nil, {llms.WithTemperature(0)}, {llms.WithTemperature(0.7), llms.WithMaxTokens(100)}} {
		if _, err := m.GenerateContent(t.Context(), human("hi"), opts...); err != nil {
			t.Fatal(err)
		}
	}
	reqs := s.requests()
	if _, set := reqs[0].body["temperature"]; set {
		t.Errorf("temperature sent without being set: %s", reqs[0].raw)
	}
	if v, set := reqs[1].body["temperature"]; !set || v != 0.0 {
		t.Errorf("explicit temperature 0 not sent: %s", reqs[1].raw)
	}
	if reqs[2].body["temperature"] != 0.7 || reqs[2].body["max_tokens"] != 100.0 {
		t.Errorf("temperature/max_tokens: %s", reqs[2].raw)
	}
}

func TestBaseURLWithAndWithoutV1(t *testing.T) {
	for _, base := range []string{"", "/", "/v1", "/v1/", "/v1/chat/completions"} {
		t.Run(base, func(t *testing.T) {
			s := newChatServer(t, sse(textChunk("ok"), finishChunk("stop")))
			m, err := llm.NewClient(llm.ClientConfig{Provider: "test", BaseURL: s.URL + base, Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.GenerateContent(t.Context(), human("hi")); err != nil {
				t.Fatal(err)
			}
			if p := s.only(t).path; p != "/v1/chat/completions" {
				t.Errorf("base %q: path %q", base, p)
			}
		})
	}
	if _, err := llm.NewClient(llm.ClientConfig{Provider: "test", BaseURL: "openrouter.ai/api", Model: "m"}); err == nil {
		t.Error("a base URL without scheme was accepted")
	}
}

func TestErrorsClassified(t *testing.T) {
	tests := []struct {
		name    string
		reply   http.HandlerFunc
		want    error
		inError []string
	}{
		{"500", status(500, `{"error":{"message":"upstream exploded"}}`), llm.ErrUnavailable, []string{"HTTP 500", "upstream exploded"}},
		{"503 html", status(503, "<html><body>Service Unavailable</body></html>"), llm.ErrUnavailable, []string{"HTTP 503", "Service Unavailable"}},
		{"529 overloaded", status(529, `{"error":{"message":"Overloaded"}}`), llm.ErrUnavailable, nil},
		{"401", status(401, `{"error":{"message":"No auth credentials found","code":401}}`), llm.ErrPermanent, []string{"HTTP 401", "No auth credentials"}},
		{"400 bad request", status(400, `{"error":{"message":"tools[0].function.name is invalid"}}`), llm.ErrPermanent, []string{"HTTP 400"}},
		{"400 context length", status(400, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."}}`), llm.ErrContextTooLong, []string{"HTTP 400", "maximum context length"}},
		{"413 prompt too long", status(413, `{"error":"prompt is too long: 210000 tokens > 200000 maximum"}`), llm.ErrContextTooLong, nil},
		{"openrouter metadata", status(502, `{"error":{"message":"Provider returned error","metadata":{"raw":"upstream said no"}}}`), llm.ErrUnavailable, []string{"upstream said no"}},
		{"429", status(429, `{"error":{"message":"slow down"}}`, "Retry-After", "3"), llm.ErrRateLimited, []string{"HTTP 429", "retry after 3s"}},
		{"error inside the stream", sse(textChunk("par"), `{"error":{"code":502,"message":"Upstream error"}}`), llm.ErrUnavailable, []string{"Upstream error"}},
		{"rate limit inside the stream", sse(`{"error":{"code":429,"message":"Rate limit exceeded"}}`), llm.ErrRateLimited, nil},
		{"stream cut before the end", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: " + textChunk("half") + "\n\n"))
		}, llm.ErrUnavailable, []string{"stream ended"}},
		{"malformed event", sse(`{"choices":[`), llm.ErrUnavailable, []string{"malformed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newChatServer(t, tt.reply)
			_, err := openrouter(t, s).GenerateContent(t.Context(), human("hi"))
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if !contains(err.Error(), append(tt.inError, "openrouter")...) {
				t.Errorf("error %q does not mention %q", err, tt.inError)
			}
		})
	}
}

func TestRetryAfterCarried(t *testing.T) {
	s := newChatServer(t, status(429, `{}`, "Retry-After", "1.5"))
	_, err := openrouter(t, s).GenerateContent(t.Context(), human("hi"))
	if d, ok := llm.RetryAfter(err); !ok || d != 1500*time.Millisecond {
		t.Errorf("RetryAfter(%v) = %v, %v", err, d, ok)
	}
}

func TestConnectionRefusedIsUnavailable(t *testing.T) {
	s := newChatServer(t)
	s.Close()
	_, err := ollama(t, s, llm.Config{}).GenerateContent(t.Context(), human("hi"))
	if !errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("error %v, want ErrUnavailable", err)
	}
}

func TestSilentServerTimesOutAsUnavailable(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // says nothing until the client gives up
	})
	m, err := llm.NewClient(llm.ClientConfig{Provider: "ollama", BaseURL: s.URL, Model: "m", IdleTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.GenerateContent(t.Context(), human("hi"))
	if !errors.Is(err, llm.ErrUnavailable) || !contains(err.Error(), "no data for 50ms") {
		t.Errorf("error %v, want ErrUnavailable after 50ms of silence", err)
	}
}

func TestCallerCancellationIsNotClassified(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: " + textChunk("hi") + "\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	m := ollama(t, s, llm.Config{})
	_, err := m.GenerateContent(ctx, human("hi"), llm.WithDeltas(func(llm.Delta) { cancel() }))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	for _, sentinel := range []error{llm.ErrUnavailable, llm.ErrPermanent, llm.ErrRateLimited} {
		if errors.Is(err, sentinel) {
			t.Errorf("cancellation classified as %v", sentinel)
		}
	}
}

func TestStreamingFuncErrorStops(t *testing.T) {
	s := newChatServer(t, sse(textChunk("a"), textChunk("b"), finishChunk("stop")))
	stop := errors.New("enough")
	_, err := ollama(t, s, llm.Config{}).GenerateContent(t.Context(), human("hi"),
		llms.WithStreamingFunc(func(context.Context, []byte) error { return stop }))
	if !errors.Is(err, stop) {
		t.Errorf("error %v, want the streaming func's", err)
	}
}

func TestNonStreamedReplyAccepted(t *testing.T) {
	s := newChatServer(t, status(200, `{"model":"m","choices":[{"message":{"content":"whole","tool_calls":[{"id":"c1","type":"function","function":{"name":"x","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`))
	var deltas deltaLog
	resp, err := ollama(t, s, llm.Config{}).GenerateContent(t.Context(), human("hi"), llm.WithDeltas(deltas.add))
	if err != nil {
		t.Fatal(err)
	}
	ch := choice(t, resp)
	if ch.Content != "whole" || len(ch.ToolCalls) != 1 || ch.ToolCalls[0].ID != "c1" || ch.ToolCalls[0].FunctionCall.Arguments != `{"a":1}` || ch.GenerationInfo["CompletionTokens"] != 4 {
		t.Errorf("choice %+v", ch)
	}
	if len(deltas.all()) == 0 {
		t.Error("no deltas for a non-streamed reply")
	}
}

func TestImagesSentAsContentParts(t *testing.T) {
	s := newChatServer(t, sse(textChunk("a cat"), finishChunk("stop")))
	msgs := []llms.MessageContent{{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
		llms.TextPart("what is this?"), llms.BinaryPart("image/png", []byte{1, 2}),
	}}}
	if _, err := ollama(t, s, llm.Config{}).GenerateContent(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	want := `[{"content":[{"text":"what is this?","type":"text"},{"image_url":{"url":"data:image/png;base64,AQI="},"type":"image_url"}],"role":"user"}]`
	if got := jsonOf(t, s.only(t).body["messages"]); got != want {
		t.Errorf("messages\n got %s\nwant %s", got, want)
	}
}

func TestDeltasSurviveEarlierMetadata(t *testing.T) {
	s := newChatServer(t, sse(textChunk("x"), finishChunk("stop")))
	mine := map[string]any{"k": "v"}
	var deltas deltaLog
	_, err := ollama(t, s, llm.Config{}).GenerateContent(t.Context(), human("hi"), llms.WithMetadata(mine), llm.WithDeltas(deltas.add))
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas.all()) != 1 || len(mine) != 1 {
		t.Errorf("deltas %v; caller's metadata map now %v", deltas.all(), mine)
	}
}
