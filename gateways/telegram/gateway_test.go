package telegram_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/telegram"
)

const chat = int64(42)

// TestRestartResumesOffset: the offset is stored after the message, read
// back by a new gateway, and neither a redelivered update nor one stored
// just before a crash is stored or answered twice. The token appears in
// no log line and no event.
func TestRestartResumesOffset(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	bot := telegram.BotID(testToken)
	if bot != "123456" {
		t.Fatalf("BotID = %q, want the numeric part", bot)
	}

	g := startGateway(t, c, s.URL, chat)
	s.push(textUpdate(10, chat, "hello"))
	eventstest.Eventually(t, "the answer to hello", func() bool { return s.count(chat, "echo: hello") == 1 })
	eventstest.Eventually(t, "offset 11", func() bool { return c.offset(t, bot) == 11 })
	// A crash after Receive and before the offset: update 11 is stored
	// (and answered) but its offset is not.
	if _, err := c.in.Receive(t.Context(), inbound.Message{Text: "eleven", Channel: "telegram:42", ExternalID: "telegram:11"}); err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, "the answer to eleven", func() bool { return s.count(chat, "echo: eleven") == 1 })
	g.Close()

	// The server lost its confirmations: it sends 10 and 11 again, then 12.
	s.mu.Lock()
	s.pending, s.offsets = nil, nil
	s.mu.Unlock()
	s.push(textUpdate(10, chat, "hello"))
	s.push(textUpdate(11, chat, "eleven"))
	s.push(textUpdate(12, chat, "twelve"))
	g = startGateway(t, c, s.URL, chat)
	defer g.Close()
	eventstest.Eventually(t, "the answer to twelve", func() bool { return s.count(chat, "echo: twelve") == 1 })
	eventstest.Eventually(t, "offset 13", func() bool { return c.offset(t, bot) == 13 })

	// Telegram restarted its update ids below our offset: served, and
	// the offset follows them down.
	s.push(textUpdate(3, chat, "after reset"))
	eventstest.Eventually(t, "the answer after the reset", func() bool { return s.count(chat, "echo: after reset") == 1 })
	eventstest.Eventually(t, "offset 4", func() bool { return c.offset(t, bot) == 4 })

	s.mu.Lock()
	first := s.offsets[0]
	s.mu.Unlock()
	if first != 11 {
		t.Errorf("first getUpdates after restart asked offset %d, want 11", first)
	}
	var got []string
	for _, m := range c.received(t) {
		got = append(got, m.ExternalID)
	}
	if want := []string{"telegram:10", "telegram:11", "telegram:12", "telegram:3"}; !slices.Equal(got, want) {
		t.Errorf("stored messages %v, want %v", got, want)
	}
	for _, text := range []string{"echo: hello", "echo: eleven"} {
		if n := s.count(chat, text); n != 1 {
			t.Errorf("%q sent %d times, want once", text, n)
		}
	}
	for _, m := range s.sentTo(chat) {
		if m.ParseMode != "" {
			t.Errorf("sent with parse_mode %q, want plain text", m.ParseMode)
		}
	}
	if containsToken(c.logs.String()) {
		t.Error("the token appears in the logs")
	}
	envs, err := c.log.ReadAll(t.Context(), events.Root+".>", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range envs {
		if containsToken(env.Subject) || containsToken(string(env.Data)) {
			t.Errorf("the token is stored in %s", env.Subject)
		}
	}
}

// TestDisallowedChat: a chat not in the list gets nothing and stores
// nothing, is logged once, and its updates still advance the offset.
func TestDisallowedChat(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	s.push(textUpdate(1, 99, "let me in"))
	s.push(textUpdate(2, 99, "please"))
	s.push(textUpdate(3, chat, "hi"))
	eventstest.Eventually(t, "the answer to hi", func() bool { return s.count(chat, "echo: hi") == 1 })
	eventstest.Eventually(t, "offset 4", func() bool { return c.offset(t, telegram.BotID(testToken)) == 4 })
	if got := s.sentTo(99); len(got) != 0 {
		t.Errorf("sent to a disallowed chat: %+v", got)
	}
	if got := c.received(t); len(got) != 1 || got[0].Channel != "telegram:42" {
		t.Errorf("stored %+v, want only the allowed chat's message", got)
	}
	if n := strings.Count(c.logs.String(), "chat not allowed"); n != 1 {
		t.Errorf("disallowed chat logged %d times, want once", n)
	}
}

// TestLongReplySplit: a 5,000-character answer arrives as two plain-text
// messages cut on a line break, nothing lost.
func TestLongReplySplit(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	s.push(textUpdate(1, chat, "long"))
	eventstest.Eventually(t, "two parts", func() bool { return len(s.sentTo(chat)) == 2 })
	parts := s.sentTo(chat)
	s.mu.Lock()
	actions := s.actions
	s.mu.Unlock()
	if actions == 0 {
		t.Error("no typing action was sent while the run was open")
	}
	for _, p := range parts {
		if len(p.Text) > telegram.MaxMessage {
			t.Errorf("part of %d characters", len(p.Text))
		}
		if !strings.HasSuffix(p.Text, "[") {
			t.Errorf("part not cut at a line end: ...%q", p.Text[len(p.Text)-10:])
		}
	}
	// The cut newline is the only thing dropped.
	if got, want := parts[0].Text+"\n"+parts[1].Text, longText(); got != want {
		t.Errorf("joined parts differ from the answer: %d vs %d characters", len(got), len(want))
	}
}

// TestApprovalButtons: an approval becomes a card with three buttons; the
// Always button decides it through the Approver (as the web does), the
// callback is answered, the buttons removed, and the run's answer arrives.
func TestApprovalButtons(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	s.push(textUpdate(1, chat, "gate please"))
	var card sentMessage
	eventstest.Eventually(t, "the approval card", func() bool {
		for _, m := range s.sentTo(chat) {
			if len(m.ReplyMarkup) > 0 {
				card = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(card.Text, "gated") || !strings.Contains(card.Text, "notes.txt") {
		t.Errorf("card text %q lacks the tool or its arguments", card.Text)
	}
	var kb struct {
		Rows [][]struct {
			Text string `json:"text"`
			Data string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal(card.ReplyMarkup, &kb); err != nil || len(kb.Rows) != 1 || len(kb.Rows[0]) != 3 {
		t.Fatalf("keyboard %s: %v", card.ReplyMarkup, err)
	}
	for _, b := range kb.Rows[0] {
		if len(b.Data) > 64 {
			t.Errorf("callback data %q over 64 bytes", b.Data)
		}
	}
	// A second message while the approval waits is refused with a hint.
	s.push(textUpdate(2, chat, "hello?"))
	eventstest.Eventually(t, "the waiting hint", func() bool {
		for _, m := range s.sentTo(chat) {
			if strings.Contains(m.Text, "waiting for your approval") {
				return true
			}
		}
		return false
	})
	always := kb.Rows[0][1]
	s.push(map[string]any{"update_id": 3, "callback_query": map[string]any{
		"id": "cb1", "data": always.Data, "from": map[string]any{"id": chat},
		"message": map[string]any{"message_id": 1, "chat": map[string]any{"id": chat}},
	}})
	eventstest.Eventually(t, "the answer after the tool", func() bool { return s.count(chat, "done after tool") == 1 })
	// The card's edit and the turn's answer race; wait for the edit too.
	var answered []string
	var edited int
	eventstest.Eventually(t, "the approval card edited", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		answered, edited = s.answered, s.edited
		return edited >= 1
	})
	if len(answered) != 1 || !strings.Contains(answered[0], "Approved") || edited != 1 {
		t.Errorf("callback answers %q, edits %d: want one approval answer and one edit", answered, edited)
	}
	envs, err := c.log.ReadAll(t.Context(), events.Root+".conv.*."+events.TypeApprovalDecided, 0)
	if err != nil || len(envs) != 1 {
		t.Fatalf("decisions %d: %v", len(envs), err)
	}
	e, _ := envs[0].Decode()
	if d := e.(*events.ApprovalDecided); d.Decision != events.DecisionApproved || !d.Always || d.Channel != "telegram:42" {
		t.Errorf("decision %+v", d)
	}
}

// TestPhoto: the largest size is downloaded into workspace/inbox and its
// relative path stored with the caption.
func TestPhoto(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	s.push(map[string]any{"update_id": 7, "message": map[string]any{
		"message_id": 7, "date": 1, "caption": "what is this",
		"chat": map[string]any{"id": chat}, "from": map[string]any{"id": chat},
		"photo": []map[string]any{
			{"file_id": "small", "width": 90, "height": 90},
			{"file_id": "big", "width": 1280, "height": 960},
			{"file_id": "mid", "width": 320, "height": 240},
		},
	}})
	eventstest.Eventually(t, "the stored photo message", func() bool { return len(c.received(t)) == 1 })
	m := c.received(t)[0]
	if m.Text != "what is this" || !slices.Equal(m.Attachments, []string{"inbox/7.jpg"}) {
		t.Errorf("stored %+v", m)
	}
	data, err := os.ReadFile(filepath.Join(c.workspace, "inbox", "7.jpg"))
	if err != nil || !bytes.Equal(data, photoBytes) {
		t.Errorf("inbox/7.jpg = %q, %v", data, err)
	}
	eventstest.Eventually(t, "an answer", func() bool { return len(s.sentTo(chat)) == 1 })
}

// A photo never lands outside the workspace: with inbox/ replaced by a
// symlink out of it (the agent's shell can), holding a 7.jpg of its own,
// the photo is refused with word to the chat and the file out there is
// neither overwritten nor joined by another.
func TestPhotoNeverFollowsInboxOutOfWorkspace(t *testing.T) {
	c := newCrew(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "7.jpg"), []byte("keep"), 0o600)
	os.MkdirAll(c.workspace, 0o700)
	if err := os.Symlink(outside, filepath.Join(c.workspace, "inbox")); err != nil {
		t.Fatal(err)
	}
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	s.push(map[string]any{"update_id": 7, "message": map[string]any{
		"message_id": 7, "date": 1, "caption": "what is this",
		"chat": map[string]any{"id": chat}, "from": map[string]any{"id": chat},
		"photo": []map[string]any{{"file_id": "big", "width": 1280, "height": 960}},
	}})
	eventstest.Eventually(t, "word that the photo was refused", func() bool {
		for _, m := range s.sentTo(chat) {
			if strings.Contains(m.Text, "inbox is not a folder inside the workspace") {
				return true
			}
		}
		return false
	})
	if b, _ := os.ReadFile(filepath.Join(outside, "7.jpg")); string(b) != "keep" {
		t.Errorf("the file outside the workspace was overwritten: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("files outside the workspace: %v", ents)
	}
	if got := c.received(t); len(got) != 0 {
		t.Errorf("stored %+v", got)
	}
}

// R-DEL: a delegated child's approval surfaces in the chat its root
// conversation belongs to.
func TestChildApprovalReachesRootChat(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	root := "telegram-42-20261130"
	for _, e := range []events.Event{
		&events.ConversationOpened{Agent: "coach", Channel: "delegate", RootID: root, RootSource: "telegram:42", ParentConversation: root, Autonomous: true},
		&events.ApprovalRequested{ApprovalID: "a1", RunID: "r1", Step: 1, CallID: "c1", Tool: "shell_run",
			Arguments: json.RawMessage(`{"command":"git push"}`), Reason: "matches shell_ask_patterns", ExpiresAt: time.Now().Add(time.Hour)},
	} {
		last, _ := c.log.Last(t.Context(), events.Conv("d-child").Filter())
		if _, err := c.log.Append(t.Context(), events.Conv("d-child"), last, events.MustNew(e)); err != nil {
			t.Fatal(err)
		}
	}
	eventstest.Eventually(t, "the child's approval card", func() bool {
		for _, m := range s.sentTo(chat) {
			if len(m.ReplyMarkup) > 0 && strings.Contains(m.Text, "git push") {
				return true
			}
		}
		return false
	})
}

// /new closes the chat's conversation with a summary (the real
// summarizer) instead of being stored as a message; without one open
// today it says so; the next message opens the day's next conversation.
func TestNewCommandStartsANewConversation(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g, err := telegram.Start(t.Context(), telegram.Config{
		Token: testToken, APIURL: s.URL, AllowedChatIDs: []int64{chat}, Workspace: c.workspace,
		Log: c.log, Inbound: c.in, Approvals: c.approver, Conversations: c.summaries, Logger: c.logger, PollEvery: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	sent := func(what, want string) {
		t.Helper()
		eventstest.Eventually(t, what, func() bool {
			for _, m := range s.sentTo(chat) {
				if strings.Contains(m.Text, want) {
					return true
				}
			}
			return false
		})
	}
	s.push(textUpdate(1, chat, "/new"))
	sent("the refusal", "Not started: this chat has no conversation open today; just write")
	s.push(textUpdate(2, chat, "hello"))
	sent("the reply", "echo: hello")
	first, err := c.in.Current(t.Context(), "", "telegram:42")
	if err != nil {
		t.Fatal(err)
	}
	s.push(textUpdate(3, chat, "/new"))
	sent("the confirmation", "next message starts a new one")
	envs, err := c.log.ReadAll(t.Context(), events.Conv(first).Subject(events.TypeConversationClosed), 0)
	if err != nil || len(envs) != 1 {
		t.Fatalf("%s closed %d times (%v), want once", first, len(envs), err)
	}
	if d, _ := envs[0].Decode(); d.(*events.ConversationClosed).Reason != "owner" {
		t.Errorf("closed %+v, want by the owner", d)
	}
	s.push(textUpdate(4, chat, "again"))
	sent("the next reply", "echo: again")
	got := c.received(t)
	if len(got) != 2 || got[0].Text != "hello" || got[1].Text != "again" {
		t.Fatalf("stored %+v, want hello and again (/new is no message)", got)
	}
	if next, _ := c.in.Current(t.Context(), "", "telegram:42"); next != first+"-2" {
		t.Errorf("the next message went to %s, want %s-2", next, first)
	}
}

// TestTelegramFailureSentenceWithSpend (issue 10 items 8 and 16): a failed
// or halted run reaches the chat as the plain sentence the web chat shows,
// naming what to do and the run's spend, never "(run halted: loop)".
func TestTelegramFailureSentenceWithSpend(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	s.push(textUpdate(1, chat, "fail401"))
	want := "Every model route failed: 401 from openrouter — check OPENROUTER_API_KEY in /crew-home/env. Spend: $0.0000."
	eventstest.EventuallyWithin(t, 10*time.Second, "the failure sentence", func() bool { return s.count(chat, want) == 1 })

	s.push(textUpdate(2, chat, "spend"))
	halt := "Stopped: the run used all its steps (max_steps) before finishing — send a message to let it carry on, or raise max_steps in the agent's agent.yaml."
	var got string
	eventstest.EventuallyWithin(t, 10*time.Second, "the max_steps sentence", func() bool {
		for _, m := range s.sentTo(chat) {
			if strings.HasPrefix(m.Text, halt) {
				got = m.Text
				return true
			}
		}
		return false
	})
	// The spend is the run's model calls': 5 steps at $0.0021.
	if want := halt + " Spend: $0.0105."; got != want {
		t.Errorf("halt message = %q, want %q", got, want)
	}
	for _, m := range s.sentTo(chat) {
		if strings.Contains(m.Text, "(run ") {
			t.Errorf("cryptic halt sent: %q", m.Text)
		}
	}
}

// TestTelegramNoTextNotice (issue 10 item 16): a run that ends without
// text tells the chat so, with its spend unknown when no cost came back.
func TestTelegramNoTextNotice(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	s.push(textUpdate(1, chat, "silent"))
	want := "The agent finished without writing a reply — send a message to ask again. Spend: cost unknown."
	eventstest.EventuallyWithin(t, 10*time.Second, "the no-text notice", func() bool { return s.count(chat, want) == 1 })
}

// TestTelegramQueuedAck (issue 10 item 16): a message sent while a turn
// runs is acknowledged at once with how many wait; it is answered after.
func TestTelegramQueuedAck(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	s.push(textUpdate(1, chat, "slow"))
	eventstest.EventuallyWithin(t, 5*time.Second, "the slow run to start", func() bool {
		envs, err := c.log.ReadAll(t.Context(), events.Root+".conv.*."+events.TypeRunStarted, 0)
		return err == nil && len(envs) == 1
	})
	s.push(textUpdate(2, chat, "second"))
	eventstest.EventuallyWithin(t, 5*time.Second, "the queued ack", func() bool { return s.count(chat, "queued: 1 waiting — answered when the running turn ends.") == 1 })
	eventstest.EventuallyWithin(t, 10*time.Second, "both answers", func() bool { return s.count(chat, "slow done") == 1 && s.count(chat, "echo: second") == 1 })
	if s.count(chat, "queued: 1 waiting — answered when the running turn ends.") != 1 {
		t.Errorf("the ack was sent more than once")
	}
}

// TestTelegramApprovalShowsCommandReadably (issue 10 item 10): the
// approval message shows a command as it would run, its line break real
// and its > as >, not JSON with \n or \u003e.
func TestTelegramApprovalShowsCommandReadably(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	s.push(textUpdate(1, chat, "gatecmd"))
	var card sentMessage
	eventstest.EventuallyWithin(t, 10*time.Second, "the approval card", func() bool {
		for _, m := range s.sentTo(chat) {
			if len(m.ReplyMarkup) > 0 {
				card = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(card.Text, "command:\necho hi > out.txt\ncat out.txt\n") || !strings.Contains(card.Text, `"timeout_seconds": 30`) {
		t.Errorf("approval text does not show the command readably:\n%s", card.Text)
	}
	for _, bad := range []string{`\n`, `\u003e`, `\"`} {
		if strings.Contains(card.Text, bad) {
			t.Errorf("approval text holds %q:\n%s", bad, card.Text)
		}
	}
}

// TestTelegramAskUserQuestionSent (issue 10 item 16, seed 000 §2.4): a
// question asked in a chat's conversation is sent there with its choices
// as buttons; pressing one answers it (the toast says so) and the turn
// carries on with that answer; pressing a button of the answered card
// again is told "Already answered." and stores nothing.
func TestTelegramAskUserQuestionSent(t *testing.T) {
	c := newCrew(t)
	s := newBotServer(t)
	g := startGateway(t, c, s.URL, chat)
	defer g.Close()
	s.push(textUpdate(1, chat, "ask"))
	var card sentMessage
	eventstest.EventuallyWithin(t, 10*time.Second, "the question", func() bool {
		for _, m := range s.sentTo(chat) {
			if strings.HasPrefix(m.Text, "Question: Which day?") && len(m.ReplyMarkup) > 0 {
				card = m
				return true
			}
		}
		return false
	})
	var kb struct {
		Rows [][]struct {
			Text string `json:"text"`
			Data string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal(card.ReplyMarkup, &kb); err != nil || len(kb.Rows) != 2 || kb.Rows[1][0].Text != "Tuesday" {
		t.Fatalf("buttons = %s (%v), want Monday and Tuesday", card.ReplyMarkup, err)
	}
	press := func(id int) {
		s.push(map[string]any{"update_id": id, "callback_query": map[string]any{
			"id": fmt.Sprint("cb", id), "data": kb.Rows[1][0].Data, "from": map[string]any{"id": chat},
			"message": map[string]any{"message_id": 1, "chat": map[string]any{"id": chat}}}})
	}
	// The card was the first message sent to the chat: message_id 1.
	press(2)
	eventstest.EventuallyWithin(t, 10*time.Second, "the turn carried on with the answer", func() bool { return s.count(chat, "got: Tuesday") == 1 })
	press(3)
	eventstest.EventuallyWithin(t, 10*time.Second, "the stale press told", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slices.Contains(s.answered, "Already answered.")
	})
	envs, err := c.log.ReadAll(t.Context(), events.Root+".conv.*."+events.TypeQuestionAnswered, 0)
	if err != nil || len(envs) != 1 {
		t.Errorf("%d question_answered (%v), want the first press only", len(envs), err)
	}
}
