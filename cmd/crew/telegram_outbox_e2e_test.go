package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/faults"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/telegram"
)

// R-TG, issue 28 (docs/deployment.md, the outbox): crew serve killed
// (SIGKILL, the crash-injection build) at each point between
// telegram_send_wanted and telegram_sent loses no reply and sends it at
// most once more — once more only when Telegram had accepted it and the
// record was not stored.
func TestTelegramSendSurvivesSIGKILLAtEveryPoint(t *testing.T) {
	const token = "777000:emulator-token"
	emu := startTelegramEmulator(t)
	for i, c := range []struct {
		point  string
		copies int // of the reply the crash cut
	}{
		{telegram.PointBeforeSend, 1},
		{telegram.PointAfterSend, 2},
		{telegram.PointAfterSent, 1},
	} {
		t.Run(c.point, func(t *testing.T) {
			chat := int64(5301 + i)
			home := initHome(t)
			appendFile(t, filepath.Join(home, "env"), "TELEGRAM_BOT_TOKEN="+token+"\n")
			appendFile(t, filepath.Join(home, "config.yaml"), "telegram:\n  api_url: "+emu+"\n")
			appendFile(t, filepath.Join(home, "agent.yaml"), "telegram:\n  allowed_chat_ids: ["+strconv.FormatInt(chat, 10)+"]\n")
			say := func(text string) {
				postEmulator(t, emu+"/sendMessage", map[string]any{
					"botToken": token, "date": time.Now().Unix(), "text": text,
					"from": map[string]any{"id": chat, "first_name": "Owner", "username": "owner", "is_bot": false},
					"chat": map[string]any{"id": chat, "first_name": "Owner", "type": "private"},
				}, nil)
			}
			count := func(text string) int {
				var hist struct {
					Result []struct {
						Message struct {
							Text string `json:"text"`
							Chat struct {
								ID int64 `json:"id"`
							} `json:"chat"`
						} `json:"message"`
						ChatID int64 `json:"chatId"`
					} `json:"result"`
				}
				postEmulator(t, emu+"/getUpdatesHistory", map[string]any{"token": token}, &hist)
				n := 0
				for _, m := range hist.Result {
					if m.Message.Text == text {
						n++
					}
				}
				return n
			}
			word := fmt.Sprintf("crash-%s-%d", c.point, chat)
			s := startServe(t, home, "MY_AGENT_ROUTES=fake:echo", faults.CrashAtTelegramEnv+"="+c.point)
			say(word)
			select {
			case <-s.done:
			case <-time.After(60 * time.Second):
				t.Fatalf("crew serve did not crash at %s within 60 s\n%s", c.point, s.stderr)
			}
			before := count("echo: " + word)
			s = startServe(t, home, "MY_AGENT_ROUTES=fake:echo")
			eventstest.EventuallyWithin(t, 60*time.Second, "the reply after the restart", func() bool { return count("echo: "+word) >= 1 })
			say("after " + word)
			eventstest.EventuallyWithin(t, 60*time.Second, "the next reply", func() bool { return count("echo: after "+word) == 1 })
			if n := count("echo: " + word); n != c.copies {
				t.Errorf("crashed at %s: the reply was sent %d times (%d before the restart), want %d", c.point, n, before, c.copies)
			}
			if strings.Contains(s.stderr.String(), "telegram send given up") {
				t.Errorf("a send was given up:\n%s", s.stderr)
			}
			s.stop(t)
		})
	}
}
