package llm

import (
	"bytes"
	"context"
	"testing"
)

func TestChatURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://openrouter.ai/api/v1", "https://openrouter.ai/api/v1/chat/completions"},
		{"https://openrouter.ai/api/v1/", "https://openrouter.ai/api/v1/chat/completions"},
		{"https://openrouter.ai/api", "https://openrouter.ai/api/v1/chat/completions"},
		{"http://127.0.0.1:11434", "http://127.0.0.1:11434/v1/chat/completions"},
		{"http://127.0.0.1:11434/v1/chat/completions", "http://127.0.0.1:11434/v1/chat/completions"},
		{"https://example.com/v1beta/openai/", "https://example.com/v1beta/openai/chat/completions"},
	}
	for _, tt := range tests {
		got, err := chatURL(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("chatURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestOllamaBase(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "http://127.0.0.1:11434"},
		{"0.0.0.0", "http://127.0.0.1:11434"},
		{"0.0.0.0:8080", "http://127.0.0.1:8080"},
		{"gpu-box:11434", "http://gpu-box:11434"},
		{"https://ollama.example.com/", "https://ollama.example.com"},
		{"[::1]:11434", "http://[::1]:11434"},
	}
	for _, tt := range tests {
		if got := ollamaBase(tt.in); got != tt.want {
			t.Errorf("ollamaBase(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		status int
		msg    string
		want   error
	}{
		{429, "", ErrRateLimited},
		{408, "", ErrUnavailable},
		{500, "", ErrUnavailable},
		{529, "", ErrUnavailable},
		{400, "overloaded_error: Overloaded", ErrUnavailable},
		{400, "This model's maximum context length is 4097 tokens", ErrContextTooLong},
		{422, "input is too long for requested model", ErrContextTooLong},
		{400, "invalid tool schema", ErrPermanent},
		{402, "insufficient credits", ErrPermanent},
		{404, "model not found", ErrPermanent},
		{0, "connection reset", ErrUnavailable},
		{0, "Rate limit exceeded", ErrRateLimited},
	}
	for _, tt := range tests {
		if got := classify(tt.status, tt.msg); got != tt.want {
			t.Errorf("classify(%d, %q) = %v, want %v", tt.status, tt.msg, got, tt.want)
		}
	}
}

func TestReadSSEFraming(t *testing.T) {
	in := ": keep-alive\r\n\r\nevent: x\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata:[DONE]\n\ndata: after\n\n"
	var got []string
	err := readSSE(bytes.NewBufferString(in), func(d []byte) (bool, error) {
		got = append(got, string(d))
		return string(d) == "[DONE]", nil
	}, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"{\"a\":\n1}", "[DONE]"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("events %q, want %q", got, want)
	}
}

// FuzzStream feeds arbitrary bytes through the SSE reader and the
// accumulator: no panic, and a reply only when the stream finished.
func FuzzStream(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":{\"k\":1}}}]}}]}\n\n"))
	f.Add([]byte("data: {\"error\":{\"code\":\"429\",\"message\":\"slow\"}}\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"{\"}},{\"id\":\"b\"}]},\"finish_reason\":\"stop\"}]}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		acc := newAccumulator(context.Background(), "fuzz", callOptions(nil))
		err := readSSE(bytes.NewReader(b), acc.event, func() {})
		if err == nil && acc.finished() {
			resp := acc.response(&Price{InputPerMTok: 1})
			for _, c := range resp.Choices[0].ToolCalls {
				if c.ID == "" || c.FunctionCall == nil || c.FunctionCall.Arguments == "" {
					t.Errorf("incomplete tool call %+v", c)
				}
			}
		}
	})
}

// FuzzParseScript: the script decoder never panics and errors are one line.
func FuzzParseScript(f *testing.F) {
	f.Add([]byte("- text: hi\n- tool_calls: [{name: x, arguments: {a: [1, {b: c}]}}]\n- error: 429\n  delay: 1ms\n"))
	f.Add([]byte("- usage: {input: 1, output: 2, cost_usd: 0.5}\n  text: x\n"))
	f.Add([]byte("- error: [1]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := ParseScript("f.yaml", b)
		if err != nil && bytes.ContainsRune([]byte(err.Error()), '\n') {
			t.Errorf("multi-line error %q", err)
		}
	})
}
