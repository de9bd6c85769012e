package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-TG through telegram-test-api and a real crew serve: the chat's
// commands reach the App's parts the gateway is given — /status the
// projections, /stop the owner's one stop, /new the summarizer — and none
// of them is stored as a message.
func TestTelegramCommandsThroughServe(t *testing.T) {
	const token = "777000:emulator-token"
	const chat = int64(5401)
	emu := startTelegramEmulator(t)
	home := initHome(t)
	appendFile(t, filepath.Join(home, "env"), "TELEGRAM_BOT_TOKEN="+token+"\n")
	appendFile(t, filepath.Join(home, "config.yaml"), "telegram:\n  api_url: "+emu+"\n")
	appendFile(t, filepath.Join(home, "agent.yaml"), "telegram:\n  allowed_chat_ids: ["+strconv.FormatInt(chat, 10)+"]\n")
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:echo")
	say := func(text string) {
		postEmulator(t, emu+"/sendMessage", map[string]any{
			"botToken": token, "date": time.Now().Unix(), "text": text,
			"from": map[string]any{"id": chat, "first_name": "Owner", "username": "owner", "is_bot": false},
			"chat": map[string]any{"id": chat, "first_name": "Owner", "type": "private"},
		}, nil)
	}
	// answered waits for a message in the chat holding want.
	answered := func(what string, want ...string) {
		t.Helper()
		eventstest.EventuallyWithin(t, 30*time.Second, what, func() bool {
			var hist struct {
				Result []struct {
					Message struct {
						Text string `json:"text"`
					} `json:"message"`
				} `json:"result"`
			}
			postEmulator(t, emu+"/getUpdatesHistory", map[string]any{"token": token}, &hist)
			for _, m := range hist.Result {
				held := 0
				for _, w := range want {
					if strings.Contains(m.Message.Text, w) {
						held++
					}
				}
				if held == len(want) {
					return true
				}
			}
			return false
		})
	}
	say("hello")
	answered("the echo", "echo: hello")
	say("/status")
	answered("the status", "Running: none\nQueued: none\nWaiting for you (/approve or /deny the latest): none")
	say("/stop")
	answered("the stop", "Nothing is running here")
	say("/new")
	answered("the close", "Closed this conversation with a summary")
	say("/new")
	answered("the second close", "Not started: this chat has no conversation open today; just write")
	say("again")
	// The next conversation is told the summary (the echo repeats it).
	answered("the next echo, told the summary", "echo: ", "Previous conversation (last at", "\n\nagain")
	var list []struct {
		ID          string `json:"id"`
		Title       string `json:"title"`
		Status      string `json:"status"`
		CloseReason string `json:"close_reason"`
		Messages    int    `json:"messages"`
	}
	if code := getJSON(t, s.url+"/api/conversations", &list); code != 200 || len(list) != 2 {
		t.Fatalf("GET /api/conversations = %d %+v, want the day's first conversation and its -2", code, list)
	}
	// Newest first; one message each: the commands were not stored.
	next, first := list[0], list[1]
	if first.Title != "hello" || first.Status != "closed" || first.CloseReason != "owner" || first.Messages != 1 {
		t.Errorf("the first conversation %+v, want hello's, closed by the owner, one message", first)
	}
	if next.ID != first.ID+"-2" || next.Title != "again" || next.Messages != 1 {
		t.Errorf("the next conversation %+v, want %s-2 with again alone", next, first.ID)
	}
	s.stop(t)
}
