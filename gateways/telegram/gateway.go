package telegram

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/summarize"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools"
	"go.etcd.io/bbolt"
)

// Receiver stores an owner's message and names the conversation a
// chat's next message goes to (agent "": the master), which /new and
// /stop act on: *inbound.Inbound.
type Receiver interface {
	Receive(ctx context.Context, m inbound.Message) (inbound.Accepted, error)
	Current(ctx context.Context, agent, channel string) (string, error)
}

// Approver decides approvals by id: the same object the web gateway uses.
type Approver interface {
	Decide(ctx context.Context, approvalID string, approve, always bool, channel string) (decision string, err error)
}

// Answerer answers questions (ask_user) by id, and says how an approval
// or a question (kind events.CardApproval, CardQuestion) was settled (""
// while it waits): *inbound.Questions, the object the web gateway uses.
type Answerer interface {
	Answer(ctx context.Context, questionID, answer, channel string) error
	Outcome(ctx context.Context, kind, id string) (string, error)
}

// Stopper stops a conversation and says what a run has cost so far:
// *inbound.Stops, the owner's one stop.
type Stopper interface {
	Stop(ctx context.Context, conversation, scope, by string) (loop.Stopped, error)
	Spend(runID string) string
}

// Closer closes a conversation with a summary: *summarize.Summarizer.
type Closer interface {
	Close(ctx context.Context, id string) (summary string, err error)
}

// Config wires a Gateway.
type Config struct {
	Token          string
	APIURL         string // default https://api.telegram.org; tests point it at an emulator
	AllowedChatIDs []int64
	Workspace      string // the master's workspace: photos go to <Workspace>/inbox/
	// Home is the crew home, whose env file a failure notice names.
	Home      string
	Log       *events.Log
	Inbound   Receiver
	Approvals Approver
	// Questions answers the questions sent here (buttons, replies), and
	// at start the copies of cards settled while the gateway was down are
	// edited as it says; nil: questions are not sent, copies not edited.
	Questions Answerer
	Logger    *slog.Logger
	// PollEvery is the pause after a getUpdates that returned nothing sooner
	// than this (an emulator that does not long-poll) or failed (default 1 s).
	PollEvery time.Duration
	// LongPoll is the getUpdates timeout asked of the server (default 25 s).
	LongPoll time.Duration
	// HTTPClient defaults to a client with a timeout above LongPoll.
	HTTPClient *http.Client
	// Conversations answers /new: it closes the chat's current
	// conversation (summarized), so the next message starts a new one
	// that is told the summary. nil: /new is an ordinary message.
	Conversations Closer
	// Artifact is the latest version of a canvas as a file, for a reply
	// line "FILE: artifact:<id>" (sent as a document, an image as a
	// photo). nil leaves such lines as text.
	Artifact func(id string) (name, mime string, data []byte, err error)
	// DB is the projections database, which answers /status: the
	// conversations running, with messages queued, and waiting for the
	// owner (projections.Overview). nil: /status is an ordinary message.
	DB *bbolt.DB
	// Fresh is the projections' read-your-writes (the Runner): /status
	// waits for them to apply what the log holds (projections.Reader),
	// so a message stored just before is in it. nil: no waiting.
	Fresh projections.Freshness
	// Stops answers /stop: it stops the chat's conversation (its running
	// turn and its queue), and the reply says what it stopped and the
	// run's spend so far; nil: /stop is an ordinary message.
	Stops Stopper
	// RetryMin and RetryMax bound the backoff of a send that failed with
	// a 5xx or a network error, and of a failing poll (default 1 s, 30 s).
	RetryMin, RetryMax time.Duration
	// Checkpoint is called at each point of a send (PointBeforeSend, …):
	// the fault-injection build crashes there; nil in every other build.
	Checkpoint func(point string)
}

// maxPhoto bounds a downloaded photo (Telegram's own bot limit is 20 MB).
const maxPhoto = 20 << 20

// Gateway polls one bot and answers its allowed chats.
type Gateway struct {
	cfg     Config
	api     *botAPI
	bot     string // log scope id, never the token
	allowed map[int64]bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	offset int64 // next getUpdates offset; poll goroutine only
	seen   map[int64]bool

	mu     sync.Mutex
	typing map[int64]int // chat → open runs

	cards cards // the pending approvals' cards, to settle everywhere

	out      outbox          // the messages wanted and not yet sent
	ctx      context.Context // the gateway's, for the chats' workers
	followed atomic.Uint64   // the last conversation event the follower applied
}

// Start reads the stored offset, starts polling and the reply follower,
// and returns. The gateway runs until Close (not until ctx ends: ctx only
// bounds Start itself), so cmd/crew must defer Close.
func Start(ctx context.Context, cfg Config) (*Gateway, error) {
	if cfg.Token == "" {
		return nil, errors.New("telegram: no bot token")
	}
	if cfg.Log == nil || cfg.Inbound == nil || cfg.Approvals == nil {
		return nil, errors.New("telegram: Log, Inbound and Approvals are required")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = "https://api.telegram.org"
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = time.Second
	}
	if cfg.LongPoll <= 0 {
		cfg.LongPoll = 25 * time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: cfg.LongPoll + 15*time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = time.Second
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 30 * time.Second
	}
	cfg.RetryMax = max(cfg.RetryMax, cfg.RetryMin)
	g := &Gateway{
		cfg:     cfg,
		api:     &botAPI{base: cfg.APIURL + "/bot" + cfg.Token, file: cfg.APIURL + "/file/bot" + cfg.Token, hc: cfg.HTTPClient, token: cfg.Token, secrets: cfg.Log.Redactor()},
		bot:     BotID(cfg.Token),
		allowed: map[int64]bool{},
		seen:    map[int64]bool{},
		typing:  map[int64]int{},
	}
	for _, id := range cfg.AllowedChatIDs {
		g.allowed[id] = true
	}
	offset, err := g.storedOffset(ctx)
	if err != nil {
		return nil, err
	}
	g.offset = offset
	pending, position, found, err := g.loadOutbox(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range pending {
		g.enqueue(w)
	}
	if !found {
		// The first start: conversations are followed from the log's end
		// (an answer of before the bot was set up is not sent), and that
		// position is stored, so from now on nothing is missed.
		last, err := cfg.Log.Last(ctx, events.Root+".>")
		if err != nil {
			return nil, fmt.Errorf("telegram: %w", err)
		}
		position = last + 1
	}
	// The low-water mark of what was just read: the next start reads on
	// from here.
	if err := g.storeMark(ctx, position); err != nil {
		return nil, err
	}
	// From the last event anything was wanted for, which is read again
	// (what it wanted is not wanted twice): an event of many messages cut
	// by a crash still wants them all.
	from := max(position, 1)
	g.followed.Store(position)
	ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	g.ctx = ctx
	g.startWorkers()
	g.wg.Go(func() { g.poll(ctx) })
	g.wg.Go(func() { g.follow(ctx, from) })
	g.wg.Go(func() { g.settleMissed(ctx) })
	g.wg.Go(func() { g.keepTyping(ctx) })
	return g, nil
}

// Close stops polling and replies and waits for them; it stores where the
// follower stopped and the outbox's low-water mark, so the next start
// reads on from there.
func (g *Gateway) Close() {
	g.cancel()
	g.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.storeMark(ctx, g.followed.Load()); err != nil {
		g.cfg.Logger.Warn("telegram: follower position not stored", "error", err)
	}
}

// BotID names a bot in the log: the numeric id before the token's ':', or
// a hash of the token when there is none. Never the token itself.
func BotID(token string) string {
	if id, _, ok := strings.Cut(token, ":"); ok {
		if _, err := strconv.ParseUint(id, 10, 64); err == nil {
			return id
		}
	}
	sum := sha256.Sum256([]byte(token))
	return "h" + hex.EncodeToString(sum[:8])
}

// storedOffset is the last TelegramOffsetAdvanced of the bot (0: none).
func (g *Gateway) storedOffset(ctx context.Context) (int64, error) {
	subject := events.Telegram(g.bot).Subject(events.TypeTelegramOffset)
	last, err := g.cfg.Log.Last(ctx, subject)
	if err != nil {
		return 0, fmt.Errorf("telegram: read offset: %w", err)
	}
	if last == 0 {
		return 0, nil
	}
	envs, err := g.cfg.Log.ReadAll(ctx, subject, last)
	if err != nil {
		return 0, fmt.Errorf("telegram: read offset: %w", err)
	}
	for _, env := range envs {
		e, err := env.Decode()
		if err != nil {
			return 0, fmt.Errorf("telegram: read offset: %w", err)
		}
		if o, ok := e.(*events.TelegramOffsetAdvanced); ok {
			return o.Offset, nil
		}
	}
	return 0, nil
}

// poll fetches updates until ctx ends. A failing poll backs off (from
// PollEvery, doubling, up to RetryMax) and is logged once per change of
// its error, and once when it recovers.
func (g *Gateway) poll(ctx context.Context) {
	failing, wait := "", g.cfg.PollEvery
	for ctx.Err() == nil {
		start := time.Now()
		var ups []update
		err := g.api.call(ctx, "getUpdates", map[string]any{
			"offset": g.offset, "timeout": int(g.cfg.LongPoll / time.Second),
			"allowed_updates": []string{"message", "callback_query"},
		}, &ups)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if msg := err.Error(); msg != failing {
				failing = msg
				g.cfg.Logger.Warn("telegram poll failed: backing off", "retry_in", wait.String(), "error", err)
			}
			if d, _ := retryable(err); d > wait {
				wait = d // a 429's retry_after
			}
			sleep(ctx, wait)
			wait = min(2*wait, max(g.cfg.RetryMax, g.cfg.PollEvery))
			continue
		}
		if failing != "" {
			g.cfg.Logger.Info("telegram poll recovered")
			failing, wait = "", g.cfg.PollEvery
		}
		if err := g.handleAll(ctx, ups); err != nil {
			if ctx.Err() != nil {
				return
			}
			// Not advanced: the same updates come again and dedupe.
			g.cfg.Logger.Error("telegram updates not stored", "error", err)
			sleep(ctx, g.cfg.PollEvery)
			continue
		}
		if len(ups) == 0 && time.Since(start) < g.cfg.PollEvery {
			sleep(ctx, g.cfg.PollEvery-time.Since(start))
		}
	}
}

// handleAll handles ups in order and then stores the next offset.
func (g *Gateway) handleAll(ctx context.Context, ups []update) error {
	next := g.offset
	// Telegram picks a random next update_id after a week without updates,
	// which may be below the stored offset: a batch entirely below it is
	// that, not a redelivery, and restarts the count.
	reset := len(ups) > 0 && ups[len(ups)-1].UpdateID < g.offset
	if reset {
		g.cfg.Logger.Warn("telegram update ids restarted below the stored offset", "offset", g.offset, "update_id", ups[0].UpdateID)
		next = 0
	}
	for _, u := range ups {
		if u.UpdateID < g.offset && !reset {
			continue // a server that ignores offset sent it again
		}
		if err := g.handle(ctx, u); err != nil {
			return fmt.Errorf("update %d: %w", u.UpdateID, err)
		}
		next = max(next, u.UpdateID+1)
	}
	if next == g.offset {
		return nil
	}
	env, err := events.New(&events.TelegramOffsetAdvanced{Offset: next})
	if err != nil {
		return err
	}
	// One poller per bot: no expectation needed.
	if _, err := g.cfg.Log.Append(ctx, events.Telegram(g.bot), events.Any, env); err != nil {
		return fmt.Errorf("store offset %d: %w", next, err)
	}
	g.offset = next
	return nil
}

// handle serves one update. A returned error means it must be fetched
// again (the store is down); a problem with the message itself is told to
// the user and the update counts as handled.
func (g *Gateway) handle(ctx context.Context, u update) error {
	switch {
	case u.Message != nil:
		return g.handleMessage(ctx, u.UpdateID, u.Message)
	case u.CallbackQuery != nil:
		return g.handleCallback(ctx, u.CallbackQuery)
	}
	return nil
}

func (g *Gateway) admit(chatID int64) bool {
	if g.allowed[chatID] {
		return true
	}
	if !g.seen[chatID] {
		if len(g.seen) >= maxTracked {
			clear(g.seen) // strangers choose their chat ids: forget, and log them again
		}
		g.seen[chatID] = true
		g.cfg.Logger.Warn("telegram chat not allowed: ignored", "chat_id", chatID)
	}
	return false
}

func (g *Gateway) handleMessage(ctx context.Context, updateID int64, m *message) error {
	if !g.admit(m.Chat.ID) {
		return nil
	}
	ref := "update:" + strconv.FormatInt(updateID, 10)
	msg := inbound.Message{
		Text:       m.Text,
		Channel:    channel(m.Chat.ID),
		ExternalID: "telegram:" + strconv.FormatInt(updateID, 10),
	}
	if m.From != nil {
		msg.From = m.From.Username
		if msg.From == "" {
			msg.From = m.From.First
		}
	}
	if len(m.Photo) > 0 {
		msg.Text = m.Caption
		rel, err := g.savePhoto(ctx, updateID, m.Photo)
		if err != nil {
			g.cfg.Logger.Warn("telegram photo not saved", "chat_id", m.Chat.ID, "error", err)
			return g.notice(ctx, m.Chat.ID, ref, "I could not download that photo: "+err.Error())
		}
		msg.Attachments = []string{rel}
	}
	if strings.TrimSpace(msg.Text) == "" && len(msg.Attachments) == 0 {
		return nil // stickers, joins, …: nothing to answer
	}
	if m.ReplyTo != nil && len(msg.Attachments) == 0 {
		if id, k, ok := g.cards.find(m.Chat.ID, m.ReplyTo.MessageID); ok && k.kind == events.CardQuestion {
			return g.answer(ctx, m.Chat.ID, ref, id, msg.Text)
		}
	}
	cmd := strings.TrimSpace(msg.Text)
	if id, _ := g.cards.latest(m.Chat.ID, events.CardQuestion); id != "" && len(msg.Attachments) == 0 && !strings.HasPrefix(cmd, "/") {
		// A question waits in this chat: the owner's plain message is its
		// answer, as a reply to its card is.
		return g.answer(ctx, m.Chat.ID, ref, id, msg.Text)
	}
	switch {
	case cmd == "/status" && g.cfg.DB != nil:
		running, queued, waiting, err := projections.Reader{DB: g.cfg.DB, Log: g.cfg.Log, Fresh: g.cfg.Fresh}.Overview(ctx)
		return g.notice(ctx, m.Chat.ID, ref, statusText(running, queued, waiting, g.questionsWaiting(m.Chat.ID), err))
	case cmd == "/approve" || cmd == "/deny":
		return g.decideLatest(ctx, m.Chat.ID, ref, cmd == "/approve")
	case cmd == "/stop" && g.cfg.Stops != nil:
		got, spend, err := g.stopChat(ctx, msg.Channel)
		if err != nil {
			text, ok := userText(err)
			if !ok {
				return err
			}
			return g.notice(ctx, m.Chat.ID, ref, text)
		}
		return g.notice(ctx, m.Chat.ID, ref, StopText(got, spend))
	}
	if cmd == "/new" && g.cfg.Conversations != nil {
		id, err := g.cfg.Inbound.Current(ctx, "", msg.Channel)
		if err == nil {
			_, err = g.cfg.Conversations.Close(ctx, id)
		}
		if errors.Is(err, summarize.ErrUnknownConversation) {
			err = errors.New("this chat has no conversation open today; just write")
		}
		if err != nil {
			return g.notice(ctx, m.Chat.ID, ref, "Not started: "+err.Error())
		}
		return g.notice(ctx, m.Chat.ID, ref, "Closed this conversation with a summary; your next message starts a new one, which is told it.")
	}
	acc, err := g.cfg.Inbound.Receive(ctx, msg)
	if err == nil {
		switch {
		case acc.Steer:
			return g.notice(ctx, m.Chat.ID, ref, "Steer noted: the running turn takes it in at its next step.")
		case acc.Queued > 0:
			return g.notice(ctx, m.Chat.ID, ref, QueuedText(acc.Queued))
		}
		return nil
	}
	if text, ok := userText(err); ok {
		return g.notice(ctx, m.Chat.ID, ref, text)
	}
	return err
}

// stopChat stops the conversation the chat's next message goes to (its
// running turn and its queue) and says the run's spend so far. A chat
// with no conversation today has nothing running.
func (g *Gateway) stopChat(ctx context.Context, channel string) (loop.Stopped, string, error) {
	id, err := g.cfg.Inbound.Current(ctx, "", channel)
	if err != nil {
		return loop.Stopped{}, "", err
	}
	got, err := g.cfg.Stops.Stop(ctx, id, events.StopAll, events.StopByTelegram)
	if errors.Is(err, inbound.ErrUnknownConversation) {
		err = fmt.Errorf("%w: this chat has no conversation open today", loop.ErrNothingRunning)
	}
	if err != nil {
		return loop.Stopped{}, "", err
	}
	return got, g.cfg.Stops.Spend(got.RunID), nil
}

// questionsWaiting are the questions whose card chatID holds, as /status
// lists them: their text's first line.
func (g *Gateway) questionsWaiting(chatID int64) []string {
	var out []string
	for _, k := range g.cards.pending(chatID, events.CardQuestion) {
		q := strings.TrimPrefix(firstLineOf(k.text, 200), "Question: ")
		out = append(out, q)
	}
	return out
}

// userText maps Receive and Decide errors to what the chat is told (the
// one place of this gateway); ok=false means retry later.
func userText(err error) (string, bool) {
	switch {
	case errors.Is(err, inbound.ErrAwaitingApproval):
		return "A tool call is waiting for your approval: press Approve, Always or Deny on it first.", true
	case errors.Is(err, inbound.ErrAwaitingAnswer):
		return "The agent is waiting for your answer to its question: press a choice on it, or reply to it with your answer.", true
	case errors.Is(err, loop.ErrNothingRunning):
		return "Nothing is running here: no turn is open and no message is waiting.", true
	case errors.Is(err, loop.ErrQuestionWithdrawn):
		return "This question was withdrawn: its run was stopped.", true
	case errors.Is(err, loop.ErrAlreadyAnswered):
		return "Already answered.", true
	case errors.Is(err, loop.ErrQuestionExpired):
		return "This question expired; the agent was told nobody answered in time.", true
	case errors.Is(err, loop.ErrBadAnswer):
		return "Not an answer: " + err.Error(), true
	case errors.Is(err, loop.ErrUnknownQuestion):
		return "No such question.", true
	case errors.Is(err, inbound.ErrQueueFull):
		return "Too many messages are queued: wait for the running turn to finish.", true
	case errors.Is(err, inbound.ErrEmptySteer):
		return "/steer needs text: /steer <what to change>", true
	case errors.Is(err, inbound.ErrClosed), errors.Is(err, inbound.ErrBadMessage), errors.Is(err, inbound.ErrParked),
		errors.Is(err, inbound.ErrUnknownAgent), errors.Is(err, inbound.ErrUnknownConversation):
		return "Not accepted: " + err.Error(), true
	case errors.Is(err, loop.ErrAlreadyDecided):
		return "Already decided.", true
	case errors.Is(err, loop.ErrUnknownApproval), errors.Is(err, events.ErrInvalidID):
		return "No such approval.", true
	}
	return "", false
}

// savePhoto downloads the largest size into <workspace>/inbox/<update>.jpg
// and returns the workspace-relative path.
func (g *Gateway) savePhoto(ctx context.Context, updateID int64, sizes []photoSize) (string, error) {
	if g.cfg.Workspace == "" {
		return "", errors.New("no workspace configured")
	}
	best := sizes[0]
	for _, s := range sizes[1:] {
		if s.Width*s.Height > best.Width*best.Height || (s.Width*s.Height == best.Width*best.Height && s.FileSize > best.FileSize) {
			best = s
		}
	}
	var f file
	if err := g.api.call(ctx, "getFile", map[string]any{"file_id": best.FileID}, &f); err != nil {
		return "", err
	}
	if f.FilePath == "" {
		return "", errors.New("getFile returned no file_path")
	}
	data, err := g.api.download(ctx, f.FilePath, maxPhoto)
	if err != nil {
		return "", err
	}
	name := strconv.FormatInt(updateID, 10) + ".jpg"
	// Inside the workspace only: an inbox/ symlinked out of it is refused.
	root, err := inbound.OpenInbox(g.cfg.Workspace, true)
	if err != nil {
		return "", fmt.Errorf("the inbox is not a folder inside the workspace: %w", err)
	}
	defer root.Close()
	if err := tools.WriteAtomic(g.api.secrets, root, name, data, 0o600); err != nil {
		return "", err
	}
	return "inbox/" + name, nil
}

func (g *Gateway) handleCallback(ctx context.Context, q *callbackQuery) error {
	if q.Message == nil || !g.admit(q.Message.Chat.ID) {
		return nil
	}
	chatID := q.Message.Chat.ID
	if strings.HasPrefix(q.Data, "q:") {
		return g.handleChoice(ctx, q)
	}
	id, approve, always, ok := parseCallback(q.Data)
	answer := "Unknown button."
	if cardID, _, found := g.cards.find(chatID, q.Message.MessageID); ok && (found && cardID != id || !found && g.cards.outcome(id) == "") {
		// A button carries its own card's id: data naming another approval,
		// or pressed on a message that is no card here (and no card settled
		// lately), is forged and decides nothing.
		g.cfg.Logger.Warn("telegram press names another approval than its card", "chat_id", chatID, "card", cardID, "data", id)
		ok = false
	}
	if ok {
		g.cards.drop(id, chatID, q.Message.MessageID)
		decision, err := g.cfg.Approvals.Decide(ctx, id, approve, always, channel(chatID))
		switch {
		case err == nil:
			answer = capitalize(decision) + "."
			if always {
				answer = "Approved; the tool is now auto-approved here."
			}
		default:
			text, handled := userText(err)
			if !handled {
				if errors.Is(err, context.Canceled) {
					return err
				}
				g.cfg.Logger.Error("telegram approval failed", "approval_id", id, "error", err)
				text = "The decision was not stored: " + err.Error()
			}
			answer = text
		}
	}
	// The toast is best effort (a press's answer expires in seconds); the
	// buttons go whatever the outcome, through the outbox: a stale card
	// cannot be pressed twice.
	if err := g.api.call(ctx, "answerCallbackQuery", map[string]any{"callback_query_id": q.ID, "text": answer}, nil); err != nil {
		g.cfg.Logger.Debug("telegram answerCallbackQuery failed", "error", err)
	}
	ref := "callback:" + q.ID
	if err := g.want(ctx, events.TelegramSendWanted{Chat: chatID, Kind: events.SendEdit, Ref: ref, MessageID: q.Message.MessageID}); err != nil {
		return err
	}
	return g.notice(ctx, chatID, ref, answer)
}

// handleChoice answers a question by the choice pressed. A stale press —
// answered or expired already, here or elsewhere — is told so and changes
// nothing; the copy loses its buttons whatever the outcome.
func (g *Gateway) handleChoice(ctx context.Context, q *callbackQuery) error {
	chatID := q.Message.Chat.ID
	toast := "Unknown button."
	id, n, ok := parseChoice(q.Data)
	if ok {
		cardID, k, found := g.cards.find(chatID, q.Message.MessageID)
		switch {
		case found && cardID != id:
			// Data naming another question than the card pressed is forged
			// (a button carries its own card's id): it answers nothing.
			g.cfg.Logger.Warn("telegram press names another question than its card", "chat_id", chatID, "card", cardID, "data", id)
		case !found || n >= len(k.choices):
			// Settled (or never ours): say how, if this gateway knows.
			switch g.cards.outcome(id) {
			case "expired":
				toast, _ = userText(loop.ErrQuestionExpired)
			default:
				toast, _ = userText(loop.ErrAlreadyAnswered)
			}
		case g.cfg.Questions == nil:
			toast = "Questions are not answered here."
		default:
			err := g.cfg.Questions.Answer(ctx, id, k.choices[n], channel(chatID))
			if err == nil {
				toast = "Answered: " + k.choices[n]
				break
			}
			text, handled := userText(err)
			if !handled {
				if errors.Is(err, context.Canceled) {
					return err
				}
				g.cfg.Logger.Error("telegram answer failed", "question_id", id, "error", err)
				text = "The answer was not stored: " + err.Error()
			}
			toast = text
		}
	}
	if err := g.api.call(ctx, "answerCallbackQuery", map[string]any{"callback_query_id": q.ID, "text": toast}, nil); err != nil {
		g.cfg.Logger.Debug("telegram answerCallbackQuery failed", "error", err)
	}
	if !ok || !strings.HasPrefix(toast, "Answered") {
		// A stale or bad press: its buttons go (an answer edits every copy).
		return g.want(ctx, events.TelegramSendWanted{Chat: chatID, Kind: events.SendEdit, Ref: "callback:" + q.ID, MessageID: q.Message.MessageID})
	}
	return nil
}

// answer answers question id with a reply's text.
func (g *Gateway) answer(ctx context.Context, chatID int64, ref, id, text string) error {
	if g.cfg.Questions == nil {
		return g.notice(ctx, chatID, ref, "Questions are not answered here.")
	}
	err := g.cfg.Questions.Answer(ctx, id, text, channel(chatID))
	if err == nil {
		return nil // every copy is edited to show the answer
	}
	msg, handled := userText(err)
	if !handled {
		return err // the store is down: the update comes again
	}
	return g.notice(ctx, chatID, ref, msg)
}

// parseChoice reads "q:<question id>:<choice index>".
func parseChoice(data string) (id string, n int, ok bool) {
	rest, found := strings.CutPrefix(data, "q:")
	if !found {
		return "", 0, false
	}
	id, num, found := strings.Cut(rest, ":")
	n, err := strconv.Atoi(num)
	if !found || id == "" || err != nil || n < 0 {
		return "", 0, false
	}
	return id, n, true
}

// Callback data: "a:<approval id>:approve|always|deny" (≤ 64 bytes).
func callbackData(approvalID, choice string) string { return "a:" + approvalID + ":" + choice }

func parseCallback(data string) (id string, approve, always, ok bool) {
	rest, found := strings.CutPrefix(data, "a:")
	if !found {
		return "", false, false, false
	}
	id, choice, found := strings.Cut(rest, ":")
	if !found || id == "" {
		return "", false, false, false
	}
	switch choice {
	case "approve":
		return id, true, false, true
	case "always":
		return id, true, true, true
	case "deny":
		return id, false, false, true
	}
	return "", false, false, false
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func channel(chatID int64) string { return "telegram:" + strconv.FormatInt(chatID, 10) }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// StopText is /stop's reply: what was stopped and the run's spend so far.
func StopText(got loop.Stopped, spend string) string {
	var what []string
	if got.RunID != "" {
		what = append(what, "the running turn")
	}
	switch got.Dropped {
	case 0:
	case 1:
		what = append(what, "dropped 1 waiting message")
	default:
		what = append(what, fmt.Sprintf("dropped %d waiting messages", got.Dropped))
	}
	switch n := len(got.Tasks); n {
	case 0:
	case 1:
		what = append(what, "killed 1 background task")
	default:
		what = append(what, fmt.Sprintf("killed %d background tasks", n))
	}
	text := "Stopped " + strings.Join(what, " and ") + "."
	if got.RunID == "" {
		text = "Stopped: " + strings.Join(what, " and ") + "."
	}
	if spend != "" {
		text += " Spend so far: " + spend + "."
	}
	return text
}
