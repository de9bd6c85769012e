package telegram

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
)

// Approval and question cards follow the owner (R-X-3): a pending approval
// or question is sent to the chat of the conversation's root when it is a
// Telegram one, else to every allowed chat (a web, API or job
// conversation, or one delegated from it); once it is decided or answered
// anywhere — a button here, the web, the API, the expiry sweep — every copy
// is edited to say so and loses its buttons, so a stale card is never
// actionable. Which message carries which card is stored on the bot's
// scope (telegram_card_sent, telegram_card_settled), so a restarted
// gateway still edits the copies it sent before.

// card is one sent copy of an approval's or a question's card.
type card struct {
	kind      string // events.CardApproval, events.CardQuestion
	chatID    int64
	messageID int64
	text      string
	choices   []string // a question's buttons
	n         int      // the order cards were sent in
}

// cards are the copies of the pending approvals' and questions' cards, by
// their id, and the outcome of those settled lately (for a stale press).
type cards struct {
	mu      sync.Mutex
	byID    map[string][]card
	settled map[string]string
	sent    int
}

// latest is the approval whose card chatID got last, among the pending.
func (c *cards) latest(chatID int64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	best, id := -1, ""
	for a, ks := range c.byID {
		for _, k := range ks {
			if k.kind == events.CardApproval && k.chatID == chatID && k.n > best {
				best, id = k.n, a
			}
		}
	}
	return id
}

// find is the card and id of the copy chatID got as messageID.
func (c *cards) find(chatID, messageID int64) (string, card, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, ks := range c.byID {
		for _, k := range ks {
			if k.chatID == chatID && k.messageID == messageID {
				return id, k, true
			}
		}
	}
	return "", card{}, false
}

func (c *cards) add(id string, k card) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[string][]card{}
	}
	if len(c.byID) >= maxTracked { // a bound: the oldest are most likely decided
		for old := range c.byID {
			delete(c.byID, old)
			break
		}
	}
	c.sent++
	k.n = c.sent
	c.byID[id] = append(c.byID[id], k)
}

// take forgets the card's copies and remembers its outcome.
func (c *cards) take(id, outcome string) []card {
	c.mu.Lock()
	defer c.mu.Unlock()
	ks := c.byID[id]
	delete(c.byID, id)
	if c.settled == nil || len(c.settled) >= maxTracked {
		c.settled = map[string]string{}
	}
	c.settled[id] = outcome
	return ks
}

// outcome is how a card lately settled was settled ("" when unknown).
func (c *cards) outcome(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settled[id]
}

// drop forgets the copy the owner pressed: its own answer edits it.
func (c *cards) drop(id string, chatID, messageID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byID[id] = slices.DeleteFunc(c.byID[id], func(k card) bool { return k.chatID == chatID && k.messageID == messageID })
}

// loadCards folds the bot's stored cards: the copies sent and not settled.
func (g *Gateway) loadCards(ctx context.Context) error {
	scope := events.Telegram(g.bot)
	type seqd struct {
		seq uint64
		e   events.Event
	}
	var all []seqd
	for _, typ := range []string{events.TypeTelegramCardSent, events.TypeTelegramCardSettled} {
		envs, err := g.cfg.Log.ReadAll(ctx, scope.Subject(typ), 0)
		if err != nil {
			return fmt.Errorf("telegram: read cards: %w", err)
		}
		for _, env := range envs {
			e, err := env.Decode()
			if err != nil {
				return fmt.Errorf("telegram: read cards (%s, sequence %d): %w", env.Subject, env.Seq, err)
			}
			all = append(all, seqd{env.Seq, e})
		}
	}
	slices.SortFunc(all, func(a, b seqd) int { return cmp.Compare(a.seq, b.seq) })
	for _, x := range all {
		switch e := x.e.(type) {
		case *events.TelegramCardSent:
			if g.cards.outcome(e.CardID) == "" {
				g.cards.add(e.CardID, card{kind: e.Kind, chatID: e.ChatID, messageID: e.MessageID, text: e.Text, choices: e.Choices})
			}
		case *events.TelegramCardSettled:
			g.cards.take(e.CardID, e.Outcome)
		}
	}
	return nil
}

// settleMissed edits the tracked copies of cards settled while the gateway
// was down (the follower only sees what is stored from its start on).
func (g *Gateway) settleMissed(ctx context.Context) {
	if g.cfg.Outcome == nil {
		return
	}
	g.cards.mu.Lock()
	pending := map[string]string{}
	for id, ks := range g.cards.byID {
		if len(ks) > 0 {
			pending[id] = ks[0].kind
		}
	}
	g.cards.mu.Unlock()
	for id, kind := range pending {
		outcome, err := g.cfg.Outcome(ctx, kind, id)
		if err != nil {
			if ctx.Err() == nil {
				g.cfg.Logger.Warn("telegram: card outcome unknown", "card_id", id, "error", err)
			}
			continue
		}
		switch outcome {
		case "":
		case "answered":
			g.settle(ctx, id, outcome, "Answered.")
		case "expired":
			if kind == events.CardQuestion {
				g.settle(ctx, id, outcome, expiredLine)
			} else {
				g.settle(ctx, id, outcome, "Expired.")
			}
		default:
			g.settle(ctx, id, outcome, capitalize(outcome)+".")
		}
	}
}

// track keeps a sent copy, in memory and on the bot's scope.
func (g *Gateway) track(ctx context.Context, id string, k card) {
	g.cards.add(id, k)
	g.store(ctx, &events.TelegramCardSent{CardID: id, Kind: k.kind, ChatID: k.chatID, MessageID: k.messageID, Text: k.text, Choices: k.choices})
}

// store appends an event to the bot's scope; a failure is logged (the
// card still works until a restart).
func (g *Gateway) store(ctx context.Context, e events.Event) {
	// Recorded even when shutdown began after the card went out.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	env, err := events.New(e)
	if err == nil {
		_, err = g.cfg.Log.Append(ctx, events.Telegram(g.bot), events.Any, env)
	}
	if err != nil && ctx.Err() == nil {
		g.cfg.Logger.Error("telegram: card not stored", "type", e.EventType(), "error", err)
	}
}

// sendCard sends an approval card to chatID and keeps the copy.
func (g *Gateway) sendCard(ctx context.Context, chatID int64, e *events.ApprovalRequested) {
	text := approvalText(e)
	if id := g.sendTracked(ctx, chatID, text, approvalKeyboard(e.ApprovalID)); id != 0 {
		g.track(ctx, e.ApprovalID, card{kind: events.CardApproval, chatID: chatID, messageID: id, text: text})
	}
}

// sendQuestion sends a question card to chatID — its choices as buttons,
// answerable too by a reply to it — and keeps the copy.
func (g *Gateway) sendQuestion(ctx context.Context, chatID int64, e *events.QuestionAsked) {
	text := questionText(e)
	var kb *inlineKeyboard
	if len(e.Choices) > 0 {
		kb = &inlineKeyboard{}
		for i, ch := range e.Choices {
			kb.Rows = append(kb.Rows, []inlineButton{{Text: ch, Data: fmt.Sprintf("q:%s:%d", e.QuestionID, i)}})
		}
	}
	if id := g.sendTracked(ctx, chatID, text, kb); id != 0 {
		g.track(ctx, e.QuestionID, card{kind: events.CardQuestion, chatID: chatID, messageID: id, text: text, choices: e.Choices})
	}
}

func questionText(e *events.QuestionAsked) string {
	how := "Reply to this message with your answer."
	if len(e.Choices) > 0 {
		how = "Press a choice, or reply to this message with your own answer."
	}
	return fmt.Sprintf("Question: %s\n%s\nExpires: %s", e.Question, how, e.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"))
}

// allowedChats are the allowed chats, sorted.
func (g *Gateway) allowedChats() []int64 {
	var chats []int64
	for id := range g.allowed {
		chats = append(chats, id)
	}
	slices.Sort(chats)
	return chats
}

// broadcastCard sends the card to every allowed chat.
func (g *Gateway) broadcastCard(ctx context.Context, e *events.ApprovalRequested) {
	for _, id := range g.allowedChats() {
		g.sendCard(ctx, id, e)
	}
}

// broadcastQuestion sends the question to every allowed chat.
func (g *Gateway) broadcastQuestion(ctx context.Context, e *events.QuestionAsked) {
	for _, id := range g.allowedChats() {
		g.sendQuestion(ctx, id, e)
	}
}

// settleCards edits every copy of the decided approval's card: the
// outcome below the text, no buttons.
func (g *Gateway) settleCards(ctx context.Context, e *events.ApprovalDecided) {
	g.settle(ctx, e.ApprovalID, e.Decision, decidedLine(e))
}

// settleQuestion edits every copy of an answered or expired question.
func (g *Gateway) settleQuestion(ctx context.Context, id, outcome, line string) {
	g.settle(ctx, id, outcome, line)
}

// settle edits every tracked copy of card id to end with line, without
// buttons, and stores that it did.
func (g *Gateway) settle(ctx context.Context, id, outcome, line string) {
	ks := g.cards.take(id, outcome)
	for _, k := range ks {
		err := g.api.call(ctx, "editMessageText", map[string]any{
			"chat_id": k.chatID, "message_id": k.messageID, "text": events.Secrets().String(k.text + "\n\n" + line),
			"reply_markup": inlineKeyboard{Rows: [][]inlineButton{}},
		}, nil)
		if err != nil { // at least the buttons go
			g.cfg.Logger.Debug("telegram editMessageText failed", "chat_id", k.chatID, "error", err)
			if err := g.api.call(ctx, "editMessageReplyMarkup", map[string]any{
				"chat_id": k.chatID, "message_id": k.messageID, "reply_markup": inlineKeyboard{Rows: [][]inlineButton{}},
			}, nil); err != nil {
				g.cfg.Logger.Debug("telegram editMessageReplyMarkup failed", "chat_id", k.chatID, "error", err)
			}
		}
	}
	if len(ks) > 0 {
		g.store(ctx, &events.TelegramCardSettled{CardID: id, Outcome: outcome})
	}
}

func decidedLine(e *events.ApprovalDecided) string {
	what := map[string]string{events.DecisionApproved: "Approved", events.DecisionDenied: "Denied", events.DecisionExpired: "Expired"}[e.Decision]
	if what == "" {
		what = "Decided (" + e.Decision + ")"
	}
	if e.Always {
		what += " (always)"
	}
	if e.Channel != "" && e.Decision != events.DecisionExpired {
		what += " on " + e.Channel
	}
	return what + "."
}

// answeredLine ends an answered question's copies.
func answeredLine(e *events.QuestionAnswered) string {
	where := ""
	if e.Channel != "" {
		where = " on " + e.Channel
	}
	return "Answered" + where + ": " + firstLineOf(e.Answer, 200)
}

const expiredLine = "Expired: nobody answered in time; the agent was told so."

func firstLineOf(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// decideLatest answers /approve and /deny: the latest pending approval
// whose card this chat got.
func (g *Gateway) decideLatest(ctx context.Context, chatID int64, approve bool) {
	id := g.cards.latest(chatID)
	if id == "" {
		g.send(ctx, chatID, "No approval is waiting here.", nil)
		return
	}
	decision, err := g.cfg.Approvals.Decide(ctx, id, approve, false, channel(chatID))
	if err != nil {
		text, handled := userText(err)
		if !handled {
			g.cfg.Logger.Error("telegram approval failed", "approval_id", id, "error", err)
			text = "The decision was not stored: " + err.Error()
		}
		g.send(ctx, chatID, text, nil)
		return
	}
	g.send(ctx, chatID, capitalize(decision)+".", nil)
}

// statusText is /status's answer.
func statusText(running, queued, waiting []string, err error) string {
	if err != nil {
		return "No status: " + err.Error()
	}
	line := func(what string, xs []string) string {
		if len(xs) == 0 {
			return what + ": none"
		}
		return what + ": " + strings.Join(xs, "; ")
	}
	return line("Running", running) + "\n" + line("Queued", queued) + "\n" + line("Waiting for you (/approve or /deny the latest)", waiting)
}
