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
// their id, and the outcome of those settled lately (for a stale press,
// and for a copy still on its way when its card was settled).
type cards struct {
	mu      sync.Mutex
	byID    map[string][]card
	settled map[string]settledCard
	sent    int
}

type settledCard struct{ outcome, line string }

// latest is the card of kind whose copy chatID got last, among the pending.
func (c *cards) latest(chatID int64, kind string) (string, card) {
	c.mu.Lock()
	defer c.mu.Unlock()
	best, id, got := -1, "", card{}
	for a, ks := range c.byID {
		for _, k := range ks {
			if k.kind == kind && k.chatID == chatID && k.n > best {
				best, id, got = k.n, a, k
			}
		}
	}
	return id, got
}

// pending are the pending cards of kind chatID holds a copy of, oldest first.
func (c *cards) pending(chatID int64, kind string) []card {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []card
	for _, ks := range c.byID {
		for _, k := range ks {
			if k.kind == kind && k.chatID == chatID {
				out = append(out, k)
			}
		}
	}
	slices.SortFunc(out, func(a, b card) int { return cmp.Compare(a.n, b.n) })
	return out
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
	for _, have := range c.byID[id] {
		if have.chatID == k.chatID && have.messageID == k.messageID {
			return // known already (the mark and the events after it)
		}
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

// take forgets the card's copies and remembers its outcome and the line
// its copies end with.
func (c *cards) take(id, outcome, line string) []card {
	c.mu.Lock()
	defer c.mu.Unlock()
	ks := c.byID[id]
	delete(c.byID, id)
	if c.settled == nil || len(c.settled) >= maxTracked {
		c.settled = map[string]settledCard{}
	}
	c.settled[id] = settledCard{outcome, line}
	return ks
}

// outcome is how a card lately settled was settled ("" when unknown).
func (c *cards) outcome(id string) string {
	o, _ := c.settledAs(id)
	return o
}

// settledAs is a card's outcome and the line its copies end with ("", ""
// while it waits or when unknown).
func (c *cards) settledAs(id string) (outcome, line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.settled[id]
	if s.outcome != "" && s.line == "" {
		s.line = capitalize(s.outcome) + "."
	}
	return s.outcome, s.line
}

// drop forgets the copy the owner pressed: its own answer edits it.
func (c *cards) drop(id string, chatID, messageID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byID[id] = slices.DeleteFunc(c.byID[id], func(k card) bool { return k.chatID == chatID && k.messageID == messageID })
}

// settleMissed edits the tracked copies of cards settled while the gateway
// was down (the follower only sees what is stored from its start on).
func (g *Gateway) settleMissed(ctx context.Context) {
	if g.cfg.Questions == nil {
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
		outcome, err := g.cfg.Questions.Outcome(ctx, kind, id)
		if err != nil {
			if ctx.Err() == nil {
				g.cfg.Logger.Warn("telegram: card outcome unknown", "card_id", id, "error", err)
			}
			continue
		}
		ref := "settle:" + id
		switch outcome {
		case "":
		case "answered":
			g.settle(ctx, id, outcome, "Answered.", ref)
		case events.DecisionWithdrawn:
			g.settle(ctx, id, outcome, withdrawnLine, ref)
		case "expired":
			if kind == events.CardQuestion {
				g.settle(ctx, id, outcome, expiredLine, ref)
			} else {
				g.settle(ctx, id, outcome, "Expired.", ref)
			}
		default:
			g.settle(ctx, id, outcome, capitalize(outcome)+".", ref)
		}
	}
}

// store appends an event to the bot's scope; a failure is logged.
func (g *Gateway) store(ctx context.Context, e events.Event) {
	// Recorded even when shutdown began.
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

// sendCard wants an approval card sent to chatID.
func (g *Gateway) sendCard(ctx context.Context, chatID int64, ref string, e *events.ApprovalRequested) error {
	return g.want(ctx, events.TelegramSendWanted{Chat: chatID, Kind: events.SendCard, Ref: ref, SourceSeq: sourceOf(ref),
		Card: &events.TelegramCardWant{CardID: e.ApprovalID, Kind: events.CardApproval, Text: approvalText(e)}})
}

// sendQuestion wants a question card sent to chatID — its choices as
// buttons, answerable too by a reply to it or a plain message.
func (g *Gateway) sendQuestion(ctx context.Context, chatID int64, ref string, e *events.QuestionAsked) error {
	return g.want(ctx, events.TelegramSendWanted{Chat: chatID, Kind: events.SendCard, Ref: ref, SourceSeq: sourceOf(ref),
		Card: &events.TelegramCardWant{CardID: e.QuestionID, Kind: events.CardQuestion, Text: questionText(e), Choices: e.Choices}})
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

// broadcastCard wants the card sent to every allowed chat.
func (g *Gateway) broadcastCard(ctx context.Context, ref string, e *events.ApprovalRequested) error {
	for _, id := range g.allowedChats() {
		if err := g.sendCard(ctx, id, ref, e); err != nil {
			return err
		}
	}
	return nil
}

// broadcastQuestion wants the question sent to every allowed chat.
func (g *Gateway) broadcastQuestion(ctx context.Context, ref string, e *events.QuestionAsked) error {
	for _, id := range g.allowedChats() {
		if err := g.sendQuestion(ctx, id, ref, e); err != nil {
			return err
		}
	}
	return nil
}

// settle wants every tracked copy of card id edited to end with line,
// without buttons, and stores that it is settled. A copy still on its way
// is sent settled (or edited once it is sent: Gateway.sent).
func (g *Gateway) settle(ctx context.Context, id, outcome, line, ref string) error {
	ks := g.cards.take(id, outcome, line)
	for i, k := range ks {
		if err := g.wantEdit(ctx, k, ref, line); err != nil {
			// Put back the copies not yet wanted edited: the follower
			// reads the event again.
			for _, rest := range ks[i:] {
				g.cards.add(id, rest)
			}
			return err
		}
	}
	if len(ks) > 0 {
		g.store(ctx, &events.TelegramCardSettled{CardID: id, Outcome: outcome})
	}
	return nil
}

func decidedLine(e *events.ApprovalDecided) string {
	if e.Decision == events.DecisionWithdrawn {
		return withdrawnLine
	}
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

// withdrawnLine ends the copies of an approval or a question whose run the
// owner stopped.
const withdrawnLine = "Withdrawn — run stopped."

func firstLineOf(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// decideLatest answers /approve and /deny: the latest pending approval
// whose card this chat got.
func (g *Gateway) decideLatest(ctx context.Context, chatID int64, ref string, approve bool) error {
	id, _ := g.cards.latest(chatID, events.CardApproval)
	if id == "" {
		return g.notice(ctx, chatID, ref, "No approval is waiting here.")
	}
	decision, err := g.cfg.Approvals.Decide(ctx, id, approve, false, channel(chatID))
	if err != nil {
		text, handled := userText(err)
		if !handled {
			g.cfg.Logger.Error("telegram approval failed", "approval_id", id, "error", err)
			text = "The decision was not stored: " + err.Error()
		}
		return g.notice(ctx, chatID, ref, text)
	}
	return g.notice(ctx, chatID, ref, capitalize(decision)+".")
}

// statusText is /status's answer: questions waiting in the chat beside
// the approvals.
func statusText(running, queued, waiting, questions []string, err error) string {
	if err != nil {
		return "No status: " + err.Error()
	}
	line := func(what string, xs []string) string {
		if len(xs) == 0 {
			return what + ": none"
		}
		return what + ": " + strings.Join(xs, "; ")
	}
	text := line("Running", running) + "\n" + line("Queued", queued) + "\n" + line("Waiting for you (/approve or /deny the latest)", waiting)
	if len(questions) > 0 {
		text += "\nQuestions waiting for your answer (reply to one, or just write to answer the latest):"
		for _, q := range questions {
			text += "\n- " + q
		}
	}
	return text
}

// open is every copy sent and not settled, in the order sent (for the
// outbox's mark).
func (c *cards) open() []events.TelegramOpenCard {
	c.mu.Lock()
	defer c.mu.Unlock()
	type copyOf struct {
		id string
		k  card
	}
	var all []copyOf
	for id, ks := range c.byID {
		for _, k := range ks {
			all = append(all, copyOf{id, k})
		}
	}
	slices.SortFunc(all, func(a, b copyOf) int { return cmp.Compare(a.k.n, b.k.n) })
	out := make([]events.TelegramOpenCard, 0, len(all))
	for _, x := range all {
		out = append(out, events.TelegramOpenCard{CardID: x.id, Kind: x.k.kind, Chat: x.k.chatID, MessageID: x.k.messageID, Text: x.k.text, Choices: x.k.choices})
	}
	return out
}
