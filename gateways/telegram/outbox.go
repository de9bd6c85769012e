package telegram

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
)

// The outbox (R-TG): every message the gateway sends is a
// telegram_send_wanted on the bot's scope first; one worker per chat sends
// the chat's wanted messages in the order they were stored and records
// each telegram_sent (or telegram_send_failed, when Telegram says the chat
// is gone). A restarted gateway loads the wanted messages not yet recorded
// and sends them first, so nothing wanted is lost; a crash after Telegram
// accepted a message and before telegram_sent was stored sends that one
// message once more (the Bot API has no idempotency key).

// Points of the send a fault-injection build may crash at (Config.Checkpoint).
const (
	PointBeforeSend = "before_send" // the wanted message is stored, not yet sent
	PointAfterSend  = "after_send"  // Telegram accepted it; telegram_sent not yet stored
	PointAfterSent  = "after_sent"  // telegram_sent is stored
)

// wanted is one stored telegram_send_wanted.
type wanted struct {
	seq uint64
	w   events.TelegramSendWanted
}

// outbox is the wanted messages not yet sent, per chat, and the refs
// wanted (so a follower that reads an event again wants nothing twice).
type outbox struct {
	mu      sync.Mutex
	queues  map[int64][]wanted
	running map[int64]bool
	refs    map[string]bool
	recent  []string // the refs wanted lately, oldest first (kept in the mark)
	// loaded counts the outbox events the start read (from the mark on).
	loaded int
}

// recentRefs bounds the refs a mark keeps.
const recentRefs = 256

func (o *outbox) remember(key string) {
	o.recent = append(o.recent, key)
	if len(o.recent) > 2*recentRefs {
		o.recent = append([]string(nil), o.recent[len(o.recent)-recentRefs:]...)
	}
}

func refKey(chat int64, kind, ref string) string {
	return strconv.FormatInt(chat, 10) + "|" + kind + "|" + ref
}

// loadOutbox folds the bot's outbox and cards: the refs wanted, the
// wanted messages neither sent nor failed (returned in order), the cards'
// copies sent and not settled, and where the follower stopped.
// Only what follows the last low-water mark is read (the mark says what
// the events before it still mean), so a start costs what happened since
// the last start or clean stop, not the whole outbox.
func (g *Gateway) loadOutbox(ctx context.Context) (pending []wanted, position uint64, found bool, err error) {
	scope := events.Telegram(g.bot)
	g.out.refs = map[string]bool{}
	from, err := g.loadMark(ctx)
	if err != nil {
		return nil, 0, false, err
	}
	if from.Settled > 0 {
		position, found = from.Seq, true
	}
	var all []events.Envelope
	for _, typ := range []string{events.TypeTelegramSendWanted, events.TypeTelegramSent, events.TypeTelegramSendFailed,
		events.TypeTelegramCardSent, events.TypeTelegramCardSettled, events.TypeTelegramOutboxPosition} {
		envs, err := g.cfg.Log.ReadAll(ctx, scope.Subject(typ), from.Settled)
		if err != nil {
			return nil, 0, false, fmt.Errorf("telegram: read outbox: %w", err)
		}
		all = append(all, envs...)
	}
	g.out.loaded = len(all)
	slices.SortFunc(all, func(a, b events.Envelope) int { return cmp.Compare(a.Seq, b.Seq) })
	open := map[uint64]wanted{}
	for _, env := range all {
		e, err := env.Decode()
		if err != nil {
			return nil, 0, false, fmt.Errorf("telegram: read outbox (%s, sequence %d): %w", env.Subject, env.Seq, err)
		}
		switch e := e.(type) {
		case *events.TelegramSendWanted:
			g.out.refs[refKey(e.Chat, e.Kind, e.Ref)] = true
			g.out.remember(refKey(e.Chat, e.Kind, e.Ref))
			open[env.Seq] = wanted{seq: env.Seq, w: *e}
			if e.SourceSeq > 0 {
				position, found = max(position, e.SourceSeq), true
			}
		case *events.TelegramSent:
			if w, ok := open[e.WantedSeq]; ok && w.w.Kind == events.SendCard && w.w.Card != nil {
				g.cards.add(w.w.Card.CardID, cardOf(w.w, e.MessageID))
			}
			delete(open, e.WantedSeq)
		case *events.TelegramSendFailed:
			delete(open, e.WantedSeq)
		case *events.TelegramCardSent: // stored before the outbox
			if g.cards.outcome(e.CardID) == "" {
				g.cards.add(e.CardID, card{kind: e.Kind, chatID: e.ChatID, messageID: e.MessageID, text: e.Text, choices: e.Choices})
			}
		case *events.TelegramCardSettled:
			g.cards.take(e.CardID, e.Outcome, "")
		case *events.TelegramOutboxPosition:
			position, found = max(position, e.Seq), true
		}
	}
	for _, w := range open {
		pending = append(pending, w)
	}
	slices.SortFunc(pending, func(a, b wanted) int { return cmp.Compare(a.seq, b.seq) })
	return pending, position, found, nil
}

// loadMark reads the last low-water mark (zero: none, read everything)
// and takes in what it keeps: the open cards and the recent refs.
func (g *Gateway) loadMark(ctx context.Context) (events.TelegramOutboxPosition, error) {
	var mark events.TelegramOutboxPosition
	subject := events.Telegram(g.bot).Subject(events.TypeTelegramOutboxPosition)
	last, err := g.cfg.Log.Last(ctx, subject)
	if err != nil {
		return mark, fmt.Errorf("telegram: read outbox mark: %w", err)
	}
	if last == 0 {
		return mark, nil
	}
	envs, err := g.cfg.Log.ReadAll(ctx, subject, last)
	if err != nil {
		return mark, fmt.Errorf("telegram: read outbox mark: %w", err)
	}
	if len(envs) == 0 {
		return mark, nil
	}
	e, err := envs[0].Decode()
	if err != nil {
		return mark, fmt.Errorf("telegram: read outbox mark (%s, sequence %d): %w", envs[0].Subject, envs[0].Seq, err)
	}
	if p, ok := e.(*events.TelegramOutboxPosition); ok && p.Settled > 0 {
		mark = *p
		for _, c := range p.Cards {
			g.cards.add(c.CardID, card{kind: c.Kind, chatID: c.Chat, messageID: c.MessageID, text: c.Text, choices: c.Choices})
		}
		for _, r := range p.Refs {
			g.out.refs[r] = true
			g.out.remember(r)
		}
	}
	return mark, nil
}

// storeMark stores the follower's position with the outbox's low-water
// mark: the lowest wanted message not yet settled (or the bot scope's end),
// the open cards and the recent refs. Called where no message is being
// wanted: at start (before the workers) and at a clean stop.
func (g *Gateway) storeMark(ctx context.Context, position uint64) error {
	g.out.mu.Lock()
	low := uint64(0)
	for _, q := range g.out.queues {
		for _, w := range q {
			if low == 0 || w.seq < low {
				low = w.seq
			}
		}
	}
	refs := slices.Clone(g.out.recent[max(0, len(g.out.recent)-recentRefs):])
	g.out.mu.Unlock()
	if low == 0 {
		last, err := g.cfg.Log.Last(ctx, events.Telegram(g.bot).Filter())
		if err != nil {
			return fmt.Errorf("telegram: store the outbox mark: %w", err)
		}
		low = last + 1
	}
	env, err := events.New(&events.TelegramOutboxPosition{Seq: position, Settled: low, Cards: g.cards.open(), Refs: refs})
	if err == nil {
		_, err = g.cfg.Log.Append(ctx, events.Telegram(g.bot), events.Any, env)
	}
	if err != nil {
		return fmt.Errorf("telegram: store the follower's position: %w", err)
	}
	return nil
}

// OutboxRead is how many outbox events the start read: those after the
// last low-water mark.
func (g *Gateway) OutboxRead() int { return g.out.loaded }

func cardOf(w events.TelegramSendWanted, messageID int64) card {
	return card{kind: w.Card.Kind, chatID: w.Chat, messageID: messageID, text: w.Card.Text, choices: w.Card.Choices}
}

// want stores w on the bot's scope and queues it for its chat's worker.
// A ref already wanted for the chat and kind is not wanted again. An error
// means it was not stored: the caller tries again (a poller's update is
// fetched again, the follower retries).
func (g *Gateway) want(ctx context.Context, w events.TelegramSendWanted) error {
	key := refKey(w.Chat, w.Kind, w.Ref)
	g.out.mu.Lock()
	dup := g.out.refs[key]
	g.out.mu.Unlock()
	if dup {
		return nil
	}
	env, err := events.New(&w)
	if err != nil {
		return err
	}
	stored, err := g.cfg.Log.Append(ctx, events.Telegram(g.bot), events.Any, env)
	if err != nil {
		return fmt.Errorf("telegram: store wanted %s %s: %w", w.Kind, w.Ref, err)
	}
	g.out.mu.Lock()
	if len(g.out.refs) >= 64*maxTracked {
		// A ref is only wanted again soon after (an update fetched again,
		// the follower's first event after a restart): forget the old.
		clear(g.out.refs)
	}
	g.out.refs[key] = true
	g.out.remember(key)
	g.out.mu.Unlock()
	g.enqueue(wanted{seq: stored[0].Seq, w: w})
	return nil
}

// wantText wants text (redacted whole, then split at MaxMessage: one
// wanted message per part, "#<n>" after the ref from the second on).
func (g *Gateway) wantText(ctx context.Context, chatID int64, kind, ref string, source uint64, text string) error {
	parts := Split(g.api.secrets.String(text), MaxMessage)
	for i, part := range parts {
		r := ref
		if i > 0 {
			r = ref + "#" + strconv.Itoa(i+1)
		}
		if err := g.want(ctx, events.TelegramSendWanted{Chat: chatID, Kind: kind, Ref: r, SourceSeq: source, Text: part}); err != nil {
			return err
		}
	}
	return nil
}

// notice wants one of the gateway's own lines, logging a failure (for
// the places that cannot ask for the update again).
func (g *Gateway) notice(ctx context.Context, chatID int64, ref, text string) error {
	err := g.wantText(ctx, chatID, events.SendNotice, ref, 0, text)
	if err != nil && ctx.Err() == nil {
		g.cfg.Logger.Error("telegram notice not stored", "chat_id", chatID, "error", err)
	}
	return err
}

// enqueue hands w to its chat's worker, starting one when none runs.
func (g *Gateway) enqueue(w wanted) {
	g.out.mu.Lock()
	defer g.out.mu.Unlock()
	if g.out.queues == nil {
		g.out.queues, g.out.running = map[int64][]wanted{}, map[int64]bool{}
	}
	g.out.queues[w.w.Chat] = append(g.out.queues[w.w.Chat], w)
	if g.out.running[w.w.Chat] || g.ctx == nil {
		return
	}
	g.out.running[w.w.Chat] = true
	g.wg.Go(func() { g.drain(g.ctx, w.w.Chat) })
}

// startWorkers starts a worker for each chat with messages queued before
// the gateway's context existed (the ones loaded at start).
func (g *Gateway) startWorkers() {
	g.out.mu.Lock()
	defer g.out.mu.Unlock()
	for chat, q := range g.out.queues {
		if len(q) > 0 && !g.out.running[chat] {
			g.out.running[chat] = true
			g.wg.Go(func() { g.drain(g.ctx, chat) })
		}
	}
}

// drain sends chat's queue in order until it is empty or ctx ends.
func (g *Gateway) drain(ctx context.Context, chat int64) {
	for {
		g.out.mu.Lock()
		q := g.out.queues[chat]
		if len(q) == 0 || ctx.Err() != nil {
			g.out.running[chat] = false
			g.out.mu.Unlock()
			return
		}
		w := q[0]
		g.out.mu.Unlock()
		if !g.deliver(ctx, w) {
			g.out.mu.Lock()
			g.out.running[chat] = false
			g.out.mu.Unlock()
			return // stopping: the message stays wanted for the next start
		}
		g.out.mu.Lock()
		g.out.queues[chat] = g.out.queues[chat][1:]
		if len(g.out.queues[chat]) == 0 {
			delete(g.out.queues, chat)
		}
		g.out.mu.Unlock()
	}
}

// deliver sends w until Telegram accepts it (telegram_sent) or gives it up
// (telegram_send_failed), riding out 429 (after its retry_after), 5xx,
// 401 and network errors with a capped backoff. false: ctx ended first.
func (g *Gateway) deliver(ctx context.Context, w wanted) bool {
	backoff := g.cfg.RetryMin
	lastErr := ""
	for {
		g.checkpoint(PointBeforeSend)
		settled := ""
		if w.w.Card != nil {
			_, settled = g.cards.settledAs(w.w.Card.CardID)
		}
		id, err := g.sendWanted(ctx, w.w, settled)
		if err == nil {
			g.checkpoint(PointAfterSend)
			g.record(ctx, &events.TelegramSent{WantedSeq: w.seq, MessageID: id})
			g.checkpoint(PointAfterSent)
			g.sent(ctx, w, id, settled != "")
			if lastErr != "" {
				g.cfg.Logger.Info("telegram send recovered", "chat_id", w.w.Chat, "wanted_seq", w.seq)
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		wait, retry := retryable(err)
		if !retry {
			var ae *apiError
			errors.As(err, &ae)
			f := &events.TelegramSendFailed{WantedSeq: w.seq, Chat: w.w.Chat, Status: ae.Status, Error: ae.Description, ChatGone: chatGone(ae)}
			g.record(ctx, f)
			g.cfg.Logger.Error("telegram send given up", "chat_id", w.w.Chat, "kind", w.w.Kind, "wanted_seq", w.seq, "chat_gone", f.ChatGone, "error", err)
			return true
		}
		if wait == 0 {
			wait = backoff
			backoff = min(2*backoff, g.cfg.RetryMax)
		}
		if msg := err.Error(); msg != lastErr {
			lastErr = msg
			g.cfg.Logger.Warn("telegram send failed: retrying", "chat_id", w.w.Chat, "wanted_seq", w.seq, "retry_in", wait.String(), "error", err)
		}
		sleep(ctx, wait)
		if ctx.Err() != nil {
			return false
		}
	}
}

// retryable says whether a failed send may succeed later, and after how
// long Telegram asked us to wait (0: our own backoff).
func retryable(err error) (time.Duration, bool) {
	var ae *apiError
	if !errors.As(err, &ae) {
		return 0, true // the network, a timeout, a broken answer
	}
	switch {
	case ae.Status == 429 || ae.Code == 429:
		return time.Duration(max(ae.RetryAfter, 1)) * time.Second, true
	case ae.Status >= 500, ae.Status == 401, ae.Status < 400:
		// 5xx: Telegram's trouble; 401: the token, which the owner mends.
		return 0, true
	}
	// Any other 4xx is the request or the chat itself: retrying cannot help.
	return 0, false
}

// chatGone says whether a 4xx means the chat cannot be written to any more.
func chatGone(ae *apiError) bool {
	if ae == nil {
		return false
	}
	d := strings.ToLower(ae.Description)
	for _, s := range []string{"chat not found", "blocked by the user", "user is deactivated", "bot was kicked", "not a member",
		"chat was deleted", "group chat was upgraded", "bot can't initiate", "bot can't send messages", "peer_id_invalid"} {
		if strings.Contains(d, s) {
			return true
		}
	}
	return ae.Status == 403
}

// record stores an outcome of the outbox, trying again until it is stored
// or the gateway stops (a stop before it is stored sends the message once
// more at the next start).
func (g *Gateway) record(ctx context.Context, e events.Event) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for {
		env, err := events.New(e)
		if err == nil {
			_, err = g.cfg.Log.Append(ctx, events.Telegram(g.bot), events.Any, env)
		}
		if err == nil {
			return
		}
		g.cfg.Logger.Error("telegram outbox record not stored", "type", e.EventType(), "error", err)
		sleep(ctx, time.Second)
		if ctx.Err() != nil {
			return
		}
	}
}

// sent keeps what a sent message means for the cards: a card's copy is
// tracked (and edited at once when it was settled while it was on its way).
func (g *Gateway) sent(ctx context.Context, w wanted, messageID int64, sentSettled bool) {
	if w.w.Kind != events.SendCard || w.w.Card == nil || messageID == 0 {
		return
	}
	id := w.w.Card.CardID
	if outcome, line := g.cards.settledAs(id); outcome != "" {
		if line != "" && !sentSettled {
			g.wantEdit(ctx, card{chatID: w.w.Chat, messageID: messageID, text: w.w.Card.Text}, "settle:"+id, line)
		}
		return
	}
	g.cards.add(id, cardOf(w.w, messageID))
}

// sendWanted makes the Bot API call w stands for and returns the message
// id Telegram gave (of an edit, the message edited).
// A card settled before it could go out (settled: its outcome's line) is
// sent as settled, without buttons.
func (g *Gateway) sendWanted(ctx context.Context, w events.TelegramSendWanted, settled string) (int64, error) {
	switch w.Kind {
	case events.SendCard:
		if w.Card == nil {
			return 0, &apiError{Method: "sendMessage", Status: 400, Description: "a card without its card"}
		}
		params := map[string]any{"chat_id": w.Chat, "text": cutUTF16(w.Card.Text, MaxMessage)}
		if settled != "" {
			params["text"] = cutUTF16(w.Card.Text+"\n\n"+settled, MaxMessage)
		} else if kb := keyboardOf(w.Card); kb != nil {
			params["reply_markup"] = kb
		}
		return g.sendMessage(ctx, params)
	case events.SendEdit:
		return w.MessageID, g.edit(ctx, w)
	case events.SendFile:
		return g.sendFile(ctx, w)
	}
	return g.sendMessage(ctx, map[string]any{"chat_id": w.Chat, "text": w.Text})
}

func (g *Gateway) sendMessage(ctx context.Context, params map[string]any) (int64, error) {
	var sent struct {
		MessageID int64 `json:"message_id"`
	}
	err := g.api.call(ctx, "sendMessage", params, &sent)
	return sent.MessageID, err
}

func keyboardOf(c *events.TelegramCardWant) *inlineKeyboard {
	switch {
	case c.Kind == events.CardApproval:
		return approvalKeyboard(c.CardID)
	case len(c.Choices) > 0:
		kb := &inlineKeyboard{}
		for i, ch := range c.Choices {
			kb.Rows = append(kb.Rows, []inlineButton{{Text: ch, Data: fmt.Sprintf("q:%s:%d", c.CardID, i)}})
		}
		return kb
	}
	return nil
}

// edit changes a card's copy: its text (when w has one) and no buttons.
// A message already so, or one whose text cannot change, at least loses
// its buttons.
func (g *Gateway) edit(ctx context.Context, w events.TelegramSendWanted) error {
	none := inlineKeyboard{Rows: [][]inlineButton{}}
	if w.Text != "" {
		err := g.api.call(ctx, "editMessageText", map[string]any{
			"chat_id": w.Chat, "message_id": w.MessageID, "text": cutUTF16(w.Text, MaxMessage), "reply_markup": none,
		}, nil)
		if err == nil || notModified(err) {
			return nil
		}
		if _, retry := retryable(err); retry {
			return err
		}
		g.cfg.Logger.Debug("telegram editMessageText failed: removing the buttons only", "chat_id", w.Chat, "error", err)
	}
	err := g.api.call(ctx, "editMessageReplyMarkup", map[string]any{"chat_id": w.Chat, "message_id": w.MessageID, "reply_markup": none}, nil)
	if notModified(err) {
		return nil
	}
	return err
}

func notModified(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == 400 && strings.Contains(strings.ToLower(ae.Description), "not modified")
}

// sendFile sends a canvas's latest version: an image as a photo (svg,
// which Telegram cannot show as one, as a document), anything else as a
// document. A canvas that cannot be read or that Telegram refuses gets a
// line saying so instead.
func (g *Gateway) sendFile(ctx context.Context, w events.TelegramSendWanted) (int64, error) {
	if g.cfg.Artifact == nil {
		return g.sendMessage(ctx, map[string]any{"chat_id": w.Chat, "text": fmt.Sprintf("(The canvas %s could not be sent: canvases are not served here.)", w.Artifact)})
	}
	name, mime, data, err := g.cfg.Artifact(w.Artifact)
	if err != nil {
		return g.sendMessage(ctx, map[string]any{"chat_id": w.Chat, "text": fmt.Sprintf("(The canvas %s could not be sent: %v.)", w.Artifact, err)})
	}
	method, field := "sendDocument", "document"
	if strings.HasPrefix(mime, "image/") && mime != "image/svg+xml" {
		method, field = "sendPhoto", "photo"
	}
	id, err := g.api.upload(ctx, method, map[string]string{"chat_id": strconv.FormatInt(w.Chat, 10)}, field, name, data)
	if err == nil {
		return id, nil
	}
	var ae *apiError
	if _, retry := retryable(err); retry || !errors.As(err, &ae) || chatGone(ae) {
		return 0, err
	}
	g.cfg.Logger.Error("telegram file send failed", "chat_id", w.Chat, "artifact", w.Artifact, "error", err)
	return g.sendMessage(ctx, map[string]any{"chat_id": w.Chat, "text": fmt.Sprintf("(The canvas %s could not be sent: %v.)", w.Artifact, err)})
}

// wantEdit wants copy k edited to end with line, without buttons.
func (g *Gateway) wantEdit(ctx context.Context, k card, ref, line string) error {
	return g.want(ctx, events.TelegramSendWanted{Chat: k.chatID, Kind: events.SendEdit, Ref: ref + "#" + strconv.FormatInt(k.messageID, 10),
		SourceSeq: sourceOf(ref), MessageID: k.messageID, Text: g.api.secrets.String(k.text + "\n\n" + line)})
}

// sourceOf is the conversation sequence of a follower's ref "conv:<seq>".
func sourceOf(ref string) uint64 {
	n, _ := strconv.ParseUint(strings.TrimPrefix(ref, "conv:"), 10, 64)
	if !strings.HasPrefix(ref, "conv:") {
		return 0
	}
	return n
}

func (g *Gateway) checkpoint(point string) {
	if g.cfg.Checkpoint != nil {
		g.cfg.Checkpoint(point)
	}
}
