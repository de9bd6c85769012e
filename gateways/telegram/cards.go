package telegram

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/my-agent-crew/crew/events"
)

// Approval cards follow the owner (R-X-3): a pending approval is sent to
// the chat of the conversation's root when it is a Telegram one, else to
// every allowed chat (a web, API or job conversation, or one delegated
// from it); once it is decided anywhere — a button here, the web, the API,
// the expiry sweep — every copy is edited to say so and loses its
// buttons, so a stale card is never actionable.

// card is one sent copy of an approval card.
type card struct {
	chatID    int64
	messageID int64
	text      string
	n         int // the order cards were sent in
}

// cards are the copies of the pending approvals' cards, by approval id.
type cards struct {
	mu   sync.Mutex
	byID map[string][]card
	sent int
}

// latest is the approval whose card chatID got last, among the pending.
func (c *cards) latest(chatID int64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	best, id := -1, ""
	for a, ks := range c.byID {
		for _, k := range ks {
			if k.chatID == chatID && k.n > best {
				best, id = k.n, a
			}
		}
	}
	return id
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

func (c *cards) take(id string) []card {
	c.mu.Lock()
	defer c.mu.Unlock()
	ks := c.byID[id]
	delete(c.byID, id)
	return ks
}

// drop forgets the copy the owner pressed: its own answer edits it.
func (c *cards) drop(id string, chatID, messageID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byID[id] = slices.DeleteFunc(c.byID[id], func(k card) bool { return k.chatID == chatID && k.messageID == messageID })
}

// sendCard sends an approval card to chatID and keeps the copy.
func (g *Gateway) sendCard(ctx context.Context, chatID int64, e *events.ApprovalRequested) {
	text := approvalText(e)
	if id := g.sendTracked(ctx, chatID, text, approvalKeyboard(e.ApprovalID)); id != 0 {
		g.cards.add(e.ApprovalID, card{chatID: chatID, messageID: id, text: text})
	}
}

// broadcastCard sends the card to every allowed chat.
func (g *Gateway) broadcastCard(ctx context.Context, e *events.ApprovalRequested) {
	var chats []int64
	for id := range g.allowed {
		chats = append(chats, id)
	}
	slices.Sort(chats)
	for _, id := range chats {
		g.sendCard(ctx, id, e)
	}
}

// settleCards edits every copy of the decided approval's card: the
// outcome below the text, no buttons.
func (g *Gateway) settleCards(ctx context.Context, e *events.ApprovalDecided) {
	line := decidedLine(e)
	for _, k := range g.cards.take(e.ApprovalID) {
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
