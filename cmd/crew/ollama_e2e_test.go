package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// llmockBin finds the aimock emulator installed by .ci/run (npm, pinned).
func llmockBin(t *testing.T) string {
	t.Helper()
	p, _ := filepath.Abs(filepath.Join("..", "..", ".ci", "npm", "node_modules", ".bin", "llmock"))
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CREW_REQUIRE_PEERS") == "1" {
			t.Fatalf("llmock not installed at %s (.ci/run installs it)", p)
		}
		t.Skipf("llmock not installed at %s: run .ci/run once (npm install of @copilotkit/aimock)", p)
	}
	return p
}

// The Ollama route end to end against a real emulator of its API: the
// agent's ollama:<model> route goes through Ollama's OpenAI-compatible /v1
// endpoint with its tools (langchaingo's own Ollama client drops them).
func TestOllamaRouteAgainstEmulator(t *testing.T) {
	bin := llmockBin(t)
	fixtures := filepath.Join(t.TempDir(), "fixtures.json")
	fx := map[string]any{"fixtures": []any{
		map[string]any{
			"match":    map[string]any{"userMessage": "what is in my workspace?", "hasToolResult": false},
			"response": map[string]any{"toolCalls": []any{map[string]any{"id": "call_ws1", "name": "workspace_list", "arguments": `{"path":"."}`}}},
		},
		map[string]any{
			"match":    map[string]any{"toolCallId": "call_ws1"},
			"response": map[string]any{"content": "Your workspace is empty."},
		},
	}}
	b, _ := json.Marshal(fx)
	os.WriteFile(fixtures, b, 0o600)
	addr := freePort(t)
	_, port, _ := net.SplitHostPort(addr)
	mock := exec.Command(bin, "-p", port, "-h", "127.0.0.1", "-f", fixtures, "--log-level", "warn")
	var mockOut lockedBuffer
	mock.Stdout, mock.Stderr = &mockOut, &mockOut
	if err := mock.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Process.Kill(); mock.Wait() })
	eventstest.Eventually(t, "llmock to listen on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=ollama:qwen3:8b", "OLLAMA_HOST=http://"+addr)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "what is in my workspace?"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "answered", settled)
	if last := c.History[len(c.History)-1]; last.Text != "Your workspace is empty." {
		t.Errorf("answer = %+v\nserve: %s\nllmock: %s", last, s.stderr, mockOut.String())
	}
	runs := finishedRuns(t, s.url, id, 1)
	var run map[string]any
	getJSON(t, s.url+"/api/runs/"+runs[0].RunID, &run)
	raw, _ := json.Marshal(run)
	if !strings.Contains(string(raw), `"route":"ollama:qwen3:8b"`) || !strings.Contains(string(raw), `"call_id":"call_ws1"`) {
		t.Errorf("run does not show the ollama route and the tool call:\n%s", raw)
	}
	s.stop(t)
}
