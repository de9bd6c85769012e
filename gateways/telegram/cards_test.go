package telegram_test

import (
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/telegram"
)

// R-X-3 through telegram-test-api: an approval asked in a web
// conversation appears in the allowed chat with its buttons; pressing
// Approve there decides it (the web card, drawn from the conversation's
// state, is replaced by the result); a second web approval decided on the
// web loses its Telegram buttons and says how it was decided.
func TestApprovalsFollowTheOwnerAcrossChannels(t *testing.T) {
	e := startEmulator(t)
	c := newCrew(t)
	const chat = int64(5151)
	g, err := telegram.Start(t.Context(), telegram.Config{
		Token: e.token, APIURL: e.url, AllowedChatIDs: []int64{chat}, Workspace: c.workspace,
		Log: c.log, DB: c.db, Inbound: c.in, Approvals: c.approver, Logger: c.logger, PollEvery: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cardOf := func(what string, skip map[int64]bool) botMessage {
		t.Helper()
		var found botMessage
		eventstest.Eventually(t, what, func() bool {
			for _, m := range e.history(t) {
				if !skip[m.MessageID] && m.Message.ReplyMarkup != nil && len(m.Message.ReplyMarkup.Rows) == 1 {
					found = m
					return true
				}
			}
			return false
		})
		return found
	}
	pending := func(conv string) []events.ApprovalDecided {
		envs, _ := c.log.ReadAll(t.Context(), events.Conv(conv).Filter(), 0)
		var out []events.ApprovalDecided
		for _, env := range envs {
			if env.Type == events.TypeApprovalDecided {
				d, _ := env.Decode()
				out = append(out, *d.(*events.ApprovalDecided))
			}
		}
		return out
	}

	// Asked on the web, approved from Telegram.
	acc, err := c.in.Receive(t.Context(), inbound.Message{Text: "gate the web note", Channel: "web"})
	if err != nil {
		t.Fatal(err)
	}
	card := cardOf("the web approval's card in the chat", nil)
	if !strings.Contains(card.Message.Text, "Approval needed: gated") {
		t.Fatalf("card text %q", card.Message.Text)
	}
	cb := e.userFields(chat)
	cb["data"] = card.Message.ReplyMarkup.Rows[0][0].Data
	cb["message"] = map[string]any{"message_id": card.MessageID, "chat": map[string]any{"id": chat}}
	e.post(t, "/sendCallback", cb, nil)
	eventstest.Eventually(t, "the web conversation's approval decided from Telegram", func() bool {
		d := pending(acc.ConversationID)
		return len(d) == 1 && d[0].Decision == events.DecisionApproved && d[0].Channel == "telegram:5151"
	})

	// Asked on the web, decided on the web: the Telegram copy is settled.
	_, err = c.in.Receive(t.Context(), inbound.Message{Text: "gate again", Channel: "web", ConversationID: acc.ConversationID})
	if err != nil {
		t.Fatal(err)
	}
	card2 := cardOf("the second card", map[int64]bool{card.MessageID: true})
	var id string
	eventstest.Eventually(t, "the second approval", func() bool {
		envs, _ := c.log.ReadAll(t.Context(), events.Conv(acc.ConversationID).Filter(), 0)
		for _, env := range envs {
			if env.Type == events.TypeApprovalRequested {
				r, _ := env.Decode()
				id = r.(*events.ApprovalRequested).ApprovalID
			}
		}
		return id != "" && strings.Contains(card2.Message.ReplyMarkup.Rows[0][0].Data, id)
	})
	if _, err := c.approver.Decide(t.Context(), id, false, false, "web"); err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, "the Telegram copy loses its buttons", func() bool {
		for _, m := range e.history(t) {
			if m.MessageID == card2.MessageID {
				// (The emulator keeps no text across an edit; the real
				// API shows "…\n\nDenied on web.".)
				return m.Message.ReplyMarkup == nil || len(m.Message.ReplyMarkup.Rows) == 0
			}
		}
		return false
	})

	// A third, answered by a text command; /status says what waits.
	if _, err := c.in.Receive(t.Context(), inbound.Message{Text: "gate thrice", Channel: "web", ConversationID: acc.ConversationID}); err != nil {
		t.Fatal(err)
	}
	cardOf("the third card", map[int64]bool{card.MessageID: true, card2.MessageID: true})
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
	e.say(t, chat, "/status")
	// The conversation is named by its first message (projections.Overview).
	sees("the status", "Waiting for you (/approve or /deny the latest): master: gate the web note")
	e.say(t, chat, "/approve")
	eventstest.Eventually(t, "the third approval decided by /approve", func() bool {
		d := pending(acc.ConversationID)
		return len(d) == 3 && d[2].Decision == events.DecisionApproved && d[2].Channel == "telegram:5151"
	})
	e.say(t, chat, "/deny")
	sees("nothing left to decide", "No approval is waiting here.")
}
