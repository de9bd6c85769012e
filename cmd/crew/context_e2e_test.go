package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// chatRequest is one request the model server received.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func (r chatRequest) system() string {
	if len(r.Messages) > 0 && r.Messages[0].Role == "system" {
		return r.Messages[0].Content
	}
	return ""
}

// userMessages are the contents of the request's user messages, in order.
func (r chatRequest) userMessages() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "user" {
			out = append(out, m.Content)
		}
	}
	return out
}

// recordingModel is an OpenAI-compatible server that keeps every request.
// It answers "ok", writes a summary when asked for one, and calls
// memory_save for a message asking to remember something.
type recordingModel struct {
	mu   sync.Mutex
	reqs []chatRequest
}

func (m *recordingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	last := req.Messages[len(req.Messages)-1]
	text := func(s string) {
		b, _ := json.Marshal(s)
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":%s},"finish_reason":"stop"}]}`+"\n\n", b)
	}
	switch {
	case req.system() == "":
		text("Summary: on 2026-11-30 the owner ran 5k and asked about oats.")
	case last.Role == "user" && strings.HasSuffix(last.Content, "remember oats"):
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_mem","type":"function","function":{"name":"memory_save","arguments":"{\"text\":\"ate oats\"}"}}]},"finish_reason":"tool_calls"}]}`+"\n\n")
	default:
		text("ok")
	}
	fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"cost":0.0001}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (m *recordingModel) requests() []chatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]chatRequest(nil), m.reqs...)
}

const frame = "[Your memory — inserted by the system before this message, not the user's words]"

func framed(notes, msg string) string { return frame + "\n" + notes + "\n[End of memory]\n\n" + msg }

// R-CTX-1 and R-CTX-2 end to end, on the exact requests a real crew serve
// sends to an OpenAI-compatible server: the system prompt's section order
// and byte stability, and the turn notes for each case of seed 000 §6.
func TestContextPromptOrderAndTurnNotesOverHTTP(t *testing.T) {
	model := &recordingModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	home := initHome(t)
	cfgPath := filepath.Join(home, "config.yaml")
	cfg, _ := os.ReadFile(cfgPath)
	cfg = regexp.MustCompile(`(?m)^timezone: .*$`).ReplaceAll(cfg, []byte("timezone: UTC"))
	must(t, os.WriteFile(cfgPath, cfg, 0o644))
	now := time.Now().UTC()
	today, yesterday := now.Format("2006-01-02"), now.AddDate(0, 0, -1).Format("2006-01-02")
	todayPath := filepath.Join(home, "memory", today+".md")
	yesterdayPath := filepath.Join(home, "memory", yesterday+".md")
	must(t, os.WriteFile(yesterdayPath, []byte("- slept badly\n"), 0o644))
	must(t, os.WriteFile(todayPath, []byte("- 09:00 ran 5k\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(home, "users", "owner", "USER.md"), []byte("The owner runs in the morning."), 0o644))
	must(t, os.WriteFile(filepath.Join(home, "users", "owner", "facts", "diet.md"), []byte("Vegetarian."), 0o644))
	must(t, os.WriteFile(filepath.Join(home, "MEMORY.md"), []byte("Prefers short answers."), 0o644))
	must(t, os.WriteFile(filepath.Join(home, "skills", "tone.md"), []byte("---\ndescription: How to sound.\nalways: true\n---\nBe warm and brief.\n"), 0o644))

	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	conv := ""
	histLen := 0
	send := func(text string) (userMsg string) {
		t.Helper()
		before := len(model.requests())
		body := map[string]any{"text": text, "channel": "web"}
		code, acc := postJSON(t, s.url+"/api/inbound", body)
		if code != 202 {
			t.Fatalf("inbound %q = %d %v", text, code, acc)
		}
		if id := acc["conversation_id"].(string); id != conv {
			conv, histLen = id, 0
		}
		c := waitConv(t, s.url, conv, "answered", func(c convView) bool { return settled(c) && len(c.History) >= histLen+2 })
		histLen = len(c.History)
		reqs := model.requests()
		if len(reqs) == before {
			t.Fatalf("no model request for %q", text)
		}
		users := reqs[before].userMessages()
		return users[len(users)-1]
	}

	// Untold: both notes whole.
	first := send("hello")
	want := framed("Yesterday's notes (memory/"+yesterday+".md):\n- slept badly\n\nToday's notes (memory/"+today+".md):\n- 09:00 ran 5k", "hello")
	if first != want {
		t.Fatalf("untold:\n%q\nwant\n%q", first, want)
	}
	// Nothing new: the message exactly as written. The model saves a note.
	if got := send("remember oats"); got != "remember oats" {
		t.Errorf("nothing new: %q", got)
	}
	note, _ := os.ReadFile(todayPath)
	added := strings.TrimPrefix(string(note), "- 09:00 ran 5k\n")
	if !strings.Contains(added, "ate oats") {
		t.Fatalf("memory_save wrote %q", note)
	}
	// Appended: only the new line.
	if got, want := send("what now?"), framed("Today's notes (memory/"+today+".md), new lines since last told:\n"+strings.TrimSpace(added), "what now?"); got != want {
		t.Errorf("appended:\n%q\nwant\n%q", got, want)
	}
	// The old turn reads the same after memory_save: history only grows.
	reqs := model.requests()
	if u := reqs[len(reqs)-1].userMessages(); u[0] != first {
		t.Errorf("the first message was rewritten in later requests:\n%q", u[0])
	}
	if got := send("again"); got != "again" {
		t.Errorf("nothing new: %q", got)
	}
	// Rewritten: the new version, saying it replaces the old.
	must(t, os.WriteFile(todayPath, []byte("- 12:00 rest day\n"), 0o644))
	if got, want := send("rewritten?"), framed("Today's notes (memory/"+today+".md) (rewritten; this replaces the version told before):\n- 12:00 rest day", "rewritten?"); got != want {
		t.Errorf("rewritten:\n%q\nwant\n%q", got, want)
	}
	// Emptied: one line.
	must(t, os.WriteFile(yesterdayPath, nil, 0o644))
	if got, want := send("emptied?"), framed("Yesterday's notes (memory/"+yesterday+".md): now empty.", "emptied?"); got != want {
		t.Errorf("emptied:\n%q\nwant\n%q", got, want)
	}
	// A kit command: the model reads the command's prompt.
	if got := send("/tongket sleep"); !strings.Contains(got, "Sum up my week") || !strings.HasSuffix(got, "sleep") || strings.Contains(got, "/tongket") {
		t.Errorf("kit command read as %q", got)
	}

	// Closing summarizes; the next conversation on the channel is told it.
	code, closed := postJSON(t, s.url+"/api/conversations/"+conv+"/close", map[string]any{})
	if code != 200 || !strings.Contains(fmt.Sprint(closed["summary"]), "ran 5k") {
		t.Fatalf("close = %d %v", code, closed)
	}
	old := conv
	got := send("new start")
	if conv != old+"-2" {
		t.Errorf("after close the message went to %s, want %s-2", conv, old)
	}
	prev := regexp.MustCompile(`^` + regexp.QuoteMeta(frame) + `\nPrevious conversation \(last at ` + today + ` \d\d:\d\d\):\nSummary: on 2026-11-30 the owner ran 5k and asked about oats\.\n\nToday's notes \(memory/` + today + `\.md\):\n- 12:00 rest day\n\[End of memory\]\n\nnew start$`)
	if !prev.MatchString(got) {
		t.Errorf("new conversation's notes:\n%q", got)
	}

	// Every conversational request carried the same system prompt bytes
	// (MEMORY.md did not change; the notes did, and they are not in it),
	// in R-CTX-1's order with the date line last.
	var system string
	for i, r := range model.requests() {
		if r.system() == "" {
			continue // the summary request
		}
		if system == "" {
			system = r.system()
		} else if r.system() != system {
			t.Fatalf("request %d: system prompt changed:\n%s\n---\n%s", i, r.system(), system)
		}
	}
	order := []string{"You are the owner's main assistant", "# About the owner", "The owner runs in the morning.", "## diet", "# Your memory (MEMORY.md)",
		"Prefers short answers.", "# The crew", "# Kit commands", "/tongket", "# Skills", "- delegation:", "## tone", "Be warm and brief.", "Today: " + today + "."}
	at := -1
	for _, part := range order {
		i := strings.Index(system, part)
		if i < 0 || i < at {
			t.Fatalf("system prompt: %q missing or out of order:\n%s", part, system)
		}
		at = i
	}
	if !strings.HasSuffix(system, "Today: "+today+".") {
		t.Errorf("the date line is not last:\n%s", system)
	}
	if strings.Contains(system, "slept badly") || strings.Contains(system, "ran 5k") {
		t.Error("daily notes leaked into the system prompt")
	}
	s.stop(t)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
