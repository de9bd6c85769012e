package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/desktop-helper/desktoptest"
	"github.com/my-agent-crew/crew/desktop-helper/wire"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// The desktop tools end to end: a real crew serve child, the real
// crew-desktop helper in a private Xvfb session driving
// gtk3-widget-factory, and a scripted OpenAI-compatible model. They skip
// without the session's programs unless CREW_REQUIRE_DESKTOP=1 (.ci/run).

// desktopSession starts the session with the factory in front and
// returns the factory's pid.
func desktopSession(t *testing.T) (*desktoptest.Session, uint32) {
	t.Helper()
	s, err := desktoptest.Start()
	if err != nil {
		if errors.Is(err, desktoptest.ErrMissing) && !desktoptest.Required() {
			t.Skip(err.Error())
		}
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	f, err := s.StartFactory()
	if err != nil {
		t.Fatal(err)
	}
	return s, uint32(f.Process.Pid)
}

// startHelper builds crew-desktop and runs it for home in the session; it
// returns a stop function (by pid), also run at cleanup.
func startHelper(t *testing.T, s *desktoptest.Session, home string) func() {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "crew-desktop")
	build := exec.Command("go", "build", "-o", bin, "../../desktop-helper")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build crew-desktop: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--home", home)
	cmd.Env = s.Env()
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("crew-desktop's log:\n%s", log)
		}
	})
	eventstest.Eventually(t, "the helper's socket", func() bool {
		ans, err := wire.Call(t.Context(), wire.SocketPath(home), wire.Request{Op: wire.OpState})
		return err == nil && ans.State != nil
	})
	return stop
}

// desktopModel scripts the master: look (screenshot), read the outline,
// click a check box by its ref, then answer; "state?" asks computer_state.
// It keeps every request's messages.
type desktopModel struct {
	mu   sync.Mutex
	sent []string
}

var (
	frameLine = regexp.MustCompile(`frame_id: (\S+)`)
	boxRef    = regexp.MustCompile(`check box "checkbutton" \[ref=(e\d+)\]\n`) // enabled and unchecked: no flags
)

func (m *desktopModel) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.sent...)
}

func (m *desktopModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad request", 400)
		return
	}
	all, _ := json.Marshal(req.Messages)
	m.mu.Lock()
	m.sent = append(m.sent, string(all))
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	say := func(text string) {
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}, "finish_reason": "stop"}}})
	}
	use := func(id, name string, args any) {
		b, _ := json.Marshal(args)
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "delta": map[string]any{"tool_calls": []any{
			map[string]any{"index": 0, "id": id, "type": "function", "function": map[string]any{"name": name, "arguments": string(b)}},
		}}}}})
	}
	// The last tool result and the last owner's words.
	var tool, owner string
	for _, msg := range req.Messages {
		text := contentText(msg["content"])
		switch msg["role"] {
		case "tool":
			tool = text
		case "user":
			// The images a tool returned ride in a user message the
			// harness writes: the tool's, not the owner's.
			if text != "" && !strings.HasPrefix(text, "[Images returned by tool calls") {
				owner, tool = text, ""
			}
		}
	}
	switch {
	case strings.Contains(owner, "state?") && tool == "":
		use("call_state", "computer_state", map[string]any{})
	case strings.Contains(owner, "state?"):
		say("STATE: " + tool)
	case tool == "":
		use("call_shot", "computer_screenshot", map[string]any{})
	case strings.Contains(tool, "The image's top-left corner"):
		use("call_observe", "computer_observe", map[string]any{})
	case boxRef.MatchString(tool):
		frame := frameLine.FindStringSubmatch(tool)[1]
		use("call_click", "computer_act", map[string]any{"action": "click", "frame_id": frame, "ref": boxRef.FindStringSubmatch(tool)[1]})
	default:
		say("DONE: " + tool)
	}
	chunk(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 12, "completion_tokens": 3, "cost": 0.001}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// contentText is a message's text, whether its content is a string or
// parts (as a cache breakpoint makes it: [{"type":"text","text":…,
// "cache_control":…}]).
func contentText(c any) string {
	switch c := c.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if p, ok := p.(map[string]any); ok && p["type"] == "text" {
				t, _ := p["text"].(string)
				b.WriteString(t)
			}
		}
		return b.String()
	}
	return ""
}

// boxes is which of the factory's "checkbutton" check boxes are checked,
// read from the accessibility bus, not through the helper.
func boxes(t *testing.T, s *desktoptest.Session, pid uint32) string {
	t.Helper()
	got, err := s.Checked(pid, "check box", "checkbutton")
	if err != nil || len(got) == 0 {
		t.Fatalf("check boxes: %v %v", got, err)
	}
	return fmt.Sprint(got)
}

// TestComputerToolsEndToEnd (R-DSK): through crew serve, a screenshot
// reaches the model as an image part; computer_act asks in a supervised
// conversation and, approved, clicks the check box the outline named; with
// the helper stopped the tools answer that it is not running and how to
// start it.
func TestComputerToolsEndToEnd(t *testing.T) {
	sess, factory := desktopSession(t)
	model := &desktopModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	home := initHome(t)
	agent := filepath.Join(home, "agent.yaml")
	b, err := os.ReadFile(agent)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, "\ncomputer: \"on\"\ncomputer_apps: [gtk3-widget-factory]\n"...)
	if err := os.WriteFile(agent, b, 0o600); err != nil {
		t.Fatal(err)
	}
	stopHelper := startHelper(t, sess, home)
	before := boxes(t, sess, factory)
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:anthropic/claude-sonnet-4",
		"OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")

	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "Tick a check box in the widget factory."})
	id, _ := acc["conversation_id"].(string)
	if id == "" {
		t.Fatalf("inbound: %v", acc)
	}
	c := waitConv(t, s.url, id, "asking to act", func(c convView) bool { return len(c.PendingApprovals) == 1 })
	if c.PendingApprovals[0].Tool != "computer_act" {
		t.Fatalf("pending %+v", c.PendingApprovals)
	}
	var image bool
	for _, r := range model.requests() {
		image = image || strings.Contains(r, `"type":"image_url"`) && strings.Contains(r, "data:image/png;base64,")
	}
	if !image {
		t.Fatal("no request to the model held the screenshot as an image part")
	}
	if got := boxes(t, sess, factory); got != before {
		t.Fatalf("checked boxes changed before the approval: %v → %v", before, got)
	}
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve: %d %v", code, body)
	}
	c = waitConv(t, s.url, id, "done", func(c convView) bool {
		return settled(c) && strings.HasPrefix(c.History[len(c.History)-1].Text, "DONE: ")
	})
	if last := c.History[len(c.History)-1].Text; !strings.Contains(last, `clicked check box \"checkbutton\"`) && !strings.Contains(last, `clicked check box "checkbutton"`) {
		t.Fatalf("the act's result: %q", last)
	}
	eventstest.Eventually(t, "a check box to change", func() bool { return boxes(t, sess, factory) != before })

	out, _, _ := crew(t, home, "doctor")
	if !regexp.MustCompile(`desktop helper: crew-desktop \S+ \(protocol 1\) at .*, display :\d+ 1024x768, AT-SPI answers`).MatchString(out) {
		t.Errorf("doctor with the helper running:\n%s", out)
	}
	stopHelper()
	_, acc = postJSON(t, s.url+"/api/inbound", map[string]any{"text": "state?"})
	c = waitConv(t, s.url, id, "the state answer", func(c convView) bool {
		return settled(c) && strings.HasPrefix(c.History[len(c.History)-1].Text, "STATE: ")
	})
	if last := c.History[len(c.History)-1].Text; !strings.Contains(last, "desktop helper is not running") || !strings.Contains(last, "crew-desktop --home") {
		t.Fatalf("without the helper: %q", last)
	}
	out, _, _ = crew(t, home, "doctor")
	if !strings.Contains(out, "desktop helper: not running") || !strings.Contains(out, "agent master: computer on, computer_apps gtk3-widget-factory") {
		t.Errorf("doctor:\n%s", out)
	}
}
