package telegram_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/telegram"
)

// /status right after a conversation started running lists it, though the
// projections' live batch holds an event up to 50 ms before it commits:
// the overview waits for them to apply what the log held
// (projections.Reader). Without the wait each answer came too soon.
func TestStatusListsWhatWasStoredJustBefore(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g, err := telegram.Start(t.Context(), telegram.Config{
		Token: testToken, APIURL: s.URL, AllowedChatIDs: []int64{chat}, Workspace: c.workspace,
		Log: c.log, DB: c.db, Fresh: c.runner, Inbound: c.in, Approvals: c.approver, Logger: c.logger, PollEvery: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i := 1; i <= 3; i++ {
		conv := fmt.Sprintf("side-%d", i)
		if _, err := c.log.Append(t.Context(), events.Conv(conv), 0,
			events.MustNew(&events.ConversationOpened{Agent: "pong", Channel: "api"}),
			events.MustNew(&events.RunStarted{RunID: conv + "-r1", Agent: "pong", Trigger: "message"})); err != nil {
			t.Fatal(err)
		}
		s.push(textUpdate(i, chat, "/status"))
		var answers []string
		eventstest.Eventually(t, "the answer to /status", func() bool {
			answers = answers[:0]
			for _, m := range s.sentTo(chat) {
				if strings.HasPrefix(m.Text, "Running:") {
					answers = append(answers, m.Text)
				}
			}
			return len(answers) == i
		})
		if !strings.Contains(answers[i-1], "pong: "+conv) {
			t.Errorf("/status right after %s started running:\n%s", conv, answers[i-1])
		}
	}
}
