package telegram_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/telegram"
	"github.com/my-agent-crew/crew/loop"
)

// Seed 000 §2.4 and R-X-3 through telegram-test-api: a question asked in a
// web conversation reaches the allowed chat with its choices as buttons; a
// press answers it and the turn carries on with that answer; a reply to
// the next question's message answers it in the owner's own words; a
// question answered on the web loses its Telegram buttons; and after a
// restart of the gateway the copies it sent before are still edited when
// the question is answered or the approval decided elsewhere (the card
// tracking is stored on the bot's scope), and one answered while it was
// down is edited when it starts.
func TestQuestionsFollowTheOwnerAcrossChannelsAndRestarts(t *testing.T) {
	e := startEmulator(t)
	c := newCrew(t)
	const chat = int64(6161)
	start := func() *telegram.Gateway {
		g, err := telegram.Start(t.Context(), telegram.Config{
			Token: e.token, APIURL: e.url, AllowedChatIDs: []int64{chat}, Workspace: c.workspace,
			Log: c.log, Inbound: c.in, Approvals: c.approver, Questions: c.answerer,
			Logger: c.logger, PollEvery: 50 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := start()
	defer func() { g.Close() }()
	seen := map[int64]bool{}
	nextCard := func(what string) botMessage {
		t.Helper()
		var found botMessage
		eventstest.Eventually(t, what, func() bool {
			for _, m := range e.history(t) {
				if !seen[m.MessageID] && strings.HasPrefix(m.Message.Text, "Question: Which day?") {
					found = m
					return true
				}
			}
			return false
		})
		seen[found.MessageID] = true
		return found
	}
	buttonsGone := func(what string, id int64) {
		t.Helper()
		eventstest.Eventually(t, what, func() bool {
			for _, m := range e.history(t) {
				if m.MessageID == id {
					return m.Message.ReplyMarkup == nil || len(m.Message.ReplyMarkup.Rows) == 0
				}
			}
			return false
		})
	}
	answered := func(conv string) []events.QuestionAnswered {
		envs, _ := c.log.ReadAll(t.Context(), events.Conv(conv).Subject(events.TypeQuestionAnswered), 0)
		var out []events.QuestionAnswered
		for _, env := range envs {
			d, _ := env.Decode()
			out = append(out, *d.(*events.QuestionAnswered))
		}
		return out
	}
	lastText := func(conv string) string {
		envs, _ := c.log.ReadAll(t.Context(), events.Conv(conv).Subject(events.TypeModelCalled), 0)
		if len(envs) == 0 {
			return ""
		}
		d, _ := envs[len(envs)-1].Decode()
		return d.(*events.ModelCalled).Text
	}
	ask := func(conv string) string {
		t.Helper()
		acc, err := c.in.Receive(t.Context(), inbound.Message{Text: "ask", Channel: "web", ConversationID: conv})
		if err != nil {
			t.Fatal(err)
		}
		return acc.ConversationID
	}

	// Asked on the web, answered by a button in Telegram.
	conv := ask("")
	card := nextCard("the web question in the chat")
	rows := card.Message.ReplyMarkup
	if rows == nil || len(rows.Rows) != 2 || rows.Rows[0][0].Text != "Monday" || rows.Rows[1][0].Text != "Tuesday" {
		t.Fatalf("buttons = %+v, want Monday and Tuesday", rows)
	}
	cb := e.userFields(chat)
	cb["data"] = rows.Rows[1][0].Data
	cb["message"] = map[string]any{"message_id": card.MessageID, "chat": map[string]any{"id": chat}}
	e.post(t, "/sendCallback", cb, nil)
	eventstest.Eventually(t, "the turn carried on with the pressed choice", func() bool {
		a := answered(conv)
		return len(a) == 1 && a[0].Answer == "Tuesday" && a[0].Channel == "telegram:6161" && lastText(conv) == "got: Tuesday"
	})
	buttonsGone("the answered card loses its buttons", card.MessageID)

	// A reply to the question's message answers it in free words.
	ask(conv)
	card = nextCard("the second question")
	reply := e.userFields(chat)
	reply["text"] = "Wednesday, if you can"
	reply["reply_to_message"] = map[string]any{"message_id": card.MessageID, "chat": map[string]any{"id": chat}, "text": card.Message.Text}
	e.post(t, "/sendMessage", reply, nil)
	eventstest.Eventually(t, "the reply answered the question", func() bool {
		a := answered(conv)
		return len(a) == 2 && a[1].Answer == "Wednesday, if you can" && lastText(conv) == "got: Wednesday, if you can"
	})
	buttonsGone("the replied card loses its buttons", card.MessageID)

	// Answered on the web: the Telegram copy is settled.
	ask(conv)
	card = nextCard("the third question")
	eventstest.Eventually(t, "the third question stored", func() bool { q := c.question(t, conv); return q != nil && len(answered(conv)) == 2 })
	if err := c.answerer.Answer(t.Context(), c.question(t, conv).QuestionID, "Friday", "web"); err != nil {
		t.Fatal(err)
	}
	buttonsGone("the card answered on the web loses its buttons", card.MessageID)

	// Asked, then the gateway restarts; answered on the web: the copy the
	// first gateway sent is edited by the second.
	ask(conv)
	card = nextCard("the fourth question")
	eventstest.Eventually(t, "the fourth card's copy stored", func() bool {
		for _, k := range c.cardCopies(t) {
			if k.MessageID == card.MessageID {
				return true
			}
		}
		return false
	})
	g.Close()
	g = start()
	var q *events.QuestionAsked
	eventstest.Eventually(t, "the fourth question stored", func() bool { q = c.question(t, conv); return len(answered(conv)) == 3 && q != nil })
	if err := c.answerer.Answer(t.Context(), q.QuestionID, "Saturday", "web"); err != nil {
		t.Fatal(err)
	}
	buttonsGone("after a restart, the old card loses its buttons", card.MessageID)

	// Answered while the gateway is down: at its start it edits the copy.
	ask(conv)
	card = nextCard("the fifth question")
	eventstest.Eventually(t, "the fifth card's copy stored", func() bool {
		for _, k := range c.cardCopies(t) {
			if k.MessageID == card.MessageID {
				return true
			}
		}
		return false
	})
	g.Close()
	eventstest.Eventually(t, "the fifth question stored", func() bool { q = c.question(t, conv); return len(answered(conv)) == 4 && q != nil })
	if err := c.answerer.Answer(t.Context(), q.QuestionID, "Sunday", "web"); err != nil {
		t.Fatal(err)
	}
	g = start()
	buttonsGone("a card answered while the gateway was down loses its buttons at its start", card.MessageID)

	// The same for an approval's card.
	if _, err := c.in.Receive(t.Context(), inbound.Message{Text: "gate after restart", Channel: "web", ConversationID: conv}); err != nil {
		t.Fatal(err)
	}
	var approval events.TelegramCardSent
	eventstest.Eventually(t, "the approval's copy stored", func() bool {
		for _, k := range c.cardCopies(t) {
			if k.Kind == events.CardApproval {
				approval = k
				return true
			}
		}
		return false
	})
	g.Close()
	g = start()
	if _, err := c.approver.Decide(t.Context(), approval.CardID, false, false, "web"); err != nil {
		t.Fatal(err)
	}
	buttonsGone("after a restart, the old approval card loses its buttons", approval.MessageID)
}

// Seed 000 §5 for questions in Telegram: a question that expires is edited
// to say so and loses its buttons; a press on it afterwards is told it
// expired and answers nothing; the turn carries on, told nobody answered.
func TestTelegramExpiredQuestionCardSettles(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	s.push(textUpdate(1, chat, "ask"))
	conv := ""
	eventstest.EventuallyWithin(t, 10*time.Second, "the question", func() bool {
		for _, m := range s.sentTo(chat) {
			if strings.HasPrefix(m.Text, "Question: Which day?") {
				return true
			}
		}
		return false
	})
	envs, err := c.log.ReadAll(t.Context(), events.Root+".conv.*."+events.TypeQuestionAsked, 0)
	if err != nil || len(envs) != 1 {
		t.Fatalf("%d questions stored (%v), want 1", len(envs), err)
	}
	conv = events.ScopeOf(envs[0].Subject).ID()
	q := c.question(t, conv)
	if q == nil {
		t.Fatalf("no question stored in %s", conv)
	}
	// The sweep's record, as the worker would store it at expires_at.
	cv, err := c.in.Convs.Get(t.Context(), conv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cv.Append(t.Context(), func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.QuestionExpired{QuestionID: q.QuestionID}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	c.worker.Kick(conv)
	eventstest.EventuallyWithin(t, 10*time.Second, "the card settled and the turn told", func() bool {
		s.mu.Lock()
		edited := s.edited
		s.mu.Unlock()
		for _, m := range s.sentTo(chat) {
			if strings.HasPrefix(m.Text, "got: No answer: nobody answered") {
				return edited > 0
			}
		}
		return false
	})
	s.push(map[string]any{"update_id": 2, "callback_query": map[string]any{
		"id": "cb2", "data": "q:" + q.QuestionID + ":0", "from": map[string]any{"id": chat},
		"message": map[string]any{"message_id": 1, "chat": map[string]any{"id": chat}}}})
	eventstest.EventuallyWithin(t, 10*time.Second, "the stale press told it expired", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slices.Contains(s.answered, "This question expired; the agent was told nobody answered in time.")
	})
	if envs, _ := c.log.ReadAll(t.Context(), events.Conv(conv).Subject(events.TypeQuestionAnswered), 0); len(envs) != 0 {
		t.Errorf("%d answers stored for an expired question", len(envs))
	}
}

// R-X-3 against a forged press: a callback on this chat's question card
// whose data names another question (one asked in another allowed chat's
// conversation, never sent here) answers neither; a button answers only
// the card it is on.
func TestTelegramForgedChoiceAnswersNoOtherQuestion(t *testing.T) {
	const other = int64(7272)
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat, other)
	defer g.Close()
	cardIn := func(who int64) int {
		t.Helper()
		id := 0
		eventstest.EventuallyWithin(t, 10*time.Second, "the question card", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			for i, m := range s.sent {
				if m.ChatID == who && strings.HasPrefix(m.Text, "Question: Which day?") {
					id = i + 1 // the fake's message ids
					return true
				}
			}
			return false
		})
		return id
	}
	s.push(textUpdate(1, chat, "ask"))
	mine := cardIn(chat)
	s.push(textUpdate(2, other, "ask"))
	cardIn(other)
	var asked []*events.QuestionAsked
	eventstest.EventuallyWithin(t, 10*time.Second, "both questions stored", func() bool {
		envs, _ := c.log.ReadAll(t.Context(), events.Root+".conv.*."+events.TypeQuestionAsked, 0)
		asked = asked[:0]
		for _, env := range envs {
			d, _ := env.Decode()
			asked = append(asked, d.(*events.QuestionAsked))
		}
		return len(asked) == 2
	})
	theirs := asked[1].QuestionID
	s.push(map[string]any{"update_id": 3, "callback_query": map[string]any{
		"id": "cb3", "data": "q:" + theirs + ":1", "from": map[string]any{"id": chat},
		"message": map[string]any{"message_id": mine, "chat": map[string]any{"id": chat}}}})
	eventstest.EventuallyWithin(t, 10*time.Second, "the forged press refused", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slices.Contains(s.answered, "Unknown button.")
	})
	if envs, _ := c.log.ReadAll(t.Context(), events.Root+".conv.*."+events.TypeQuestionAnswered, 0); len(envs) != 0 {
		d, _ := envs[0].Decode()
		t.Fatalf("a forged press answered %+v", d)
	}
}

// R-X-3 against a forged press: data naming another approval (one of
// another allowed chat's conversation, never sent here), on this chat's
// approval card or on a message that is no card, decides nothing.
func TestTelegramForgedApprovalPressDecidesNoOtherApproval(t *testing.T) {
	const other = int64(7373)
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat, other)
	defer g.Close()
	cardIn := func(who int64) int {
		t.Helper()
		id := 0
		eventstest.EventuallyWithin(t, 10*time.Second, "the approval card", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			for i, m := range s.sent {
				if m.ChatID == who && strings.Contains(string(m.ReplyMarkup), `"a:`) {
					id = i + 1 // the fake's message ids
					return true
				}
			}
			return false
		})
		return id
	}
	s.push(textUpdate(1, chat, "gate mine"))
	mine := cardIn(chat)
	s.push(textUpdate(2, other, "gate theirs"))
	cardIn(other)
	var asked []*events.ApprovalRequested
	eventstest.EventuallyWithin(t, 10*time.Second, "both approvals stored", func() bool {
		envs, _ := c.log.ReadAll(t.Context(), events.Root+".conv.*."+events.TypeApprovalRequested, 0)
		asked = asked[:0]
		for _, env := range envs {
			d, _ := env.Decode()
			asked = append(asked, d.(*events.ApprovalRequested))
		}
		return len(asked) == 2
	})
	s.push(map[string]any{"update_id": 3, "callback_query": map[string]any{
		"id": "cb3", "data": "a:" + asked[1].ApprovalID + ":always", "from": map[string]any{"id": chat},
		"message": map[string]any{"message_id": mine, "chat": map[string]any{"id": chat}}}})
	// The same data on a message that is no card.
	s.push(map[string]any{"update_id": 4, "callback_query": map[string]any{
		"id": "cb4", "data": "a:" + asked[1].ApprovalID + ":always", "from": map[string]any{"id": chat},
		"message": map[string]any{"message_id": 9999, "chat": map[string]any{"id": chat}}}})
	eventstest.EventuallyWithin(t, 10*time.Second, "both forged presses refused", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := 0
		for _, a := range s.answered {
			if a == "Unknown button." {
				n++
			}
		}
		return n == 2
	})
	if envs, _ := c.log.ReadAll(t.Context(), events.Root+".conv.*."+events.TypeApprovalDecided, 0); len(envs) != 0 {
		d, _ := envs[0].Decode()
		t.Fatalf("a forged press decided %+v", d)
	}
}
