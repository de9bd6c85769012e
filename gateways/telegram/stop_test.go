package telegram_test

import (
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/telegram"
)

// Issue 27 against the real telegram-test-api: /stop stops the chat's
// running turn while its approval waits; the reply says what was stopped
// and the spend so far; the approval card is settled withdrawn and loses
// its buttons; the run ends stopped by telegram; a second /stop says
// nothing runs.
func TestTelegramStopWithdrawsTheCard(t *testing.T) {
	e := startEmulator(t)
	c := newCrew(t)
	const chat = int64(6161)
	g, err := telegram.Start(t.Context(), telegram.Config{
		Token: e.token, APIURL: e.url, AllowedChatIDs: []int64{chat}, Workspace: c.workspace,
		Log: c.log, Inbound: c.in, Approvals: c.approver, Questions: c.answerer, Logger: c.logger, PollEvery: 50 * time.Millisecond,
		Stops: c.stops,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	sees := func(what, want string) {
		t.Helper()
		eventstest.Eventually(t, what, func() bool {
			for _, m := range e.history(t) {
				if strings.Contains(m.Message.Text, want) {
					return true
				}
			}
			return false
		})
	}
	e.say(t, chat, "gate the deploy")
	var card botMessage
	eventstest.Eventually(t, "the approval card", func() bool {
		for _, m := range e.history(t) {
			if m.Message.ReplyMarkup != nil && len(m.Message.ReplyMarkup.Rows) == 1 {
				card = m
				return true
			}
		}
		return false
	})
	e.say(t, chat, "/stop")
	sees("the stop's reply", "Stopped the running turn. Spend so far: $0.0000.")
	eventstest.Eventually(t, "the card loses its buttons", func() bool {
		for _, m := range e.history(t) {
			if m.MessageID == card.MessageID {
				return m.Message.ReplyMarkup == nil || len(m.Message.ReplyMarkup.Rows) == 0
			}
		}
		return false
	})
	eventstest.Eventually(t, "the card settled withdrawn and the run stopped by telegram", func() bool {
		envs, _ := c.log.ReadAll(t.Context(), events.Root+".>", 0)
		settled, stopped := false, false
		for _, env := range envs {
			d, err := env.Decode()
			if err != nil {
				continue
			}
			switch d := d.(type) {
			case *events.TelegramCardSettled:
				settled = settled || d.Outcome == events.DecisionWithdrawn
			case *events.RunFinished:
				stopped = stopped || (d.Status == events.RunStopped && d.By == events.StopByTelegram)
			}
		}
		return settled && stopped
	})
	e.say(t, chat, "/stop")
	sees("nothing running", "Nothing is running here")
}
