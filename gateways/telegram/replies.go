package telegram

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// MaxMessage is Telegram's limit on a message's text, in UTF-16 units.
const MaxMessage = 4096

// maxTracked bounds each map the gateway keeps per chat or conversation
// (strangers seen, delegated conversations followed): a process that runs
// for months keeps a fixed amount.
const maxTracked = 1024

// runView is what the follower remembers of a conversation's open run:
// whether it saw it start, and the reply folded so far.
type runView struct {
	open bool
	loop.RunReply
}

// QueuedText acknowledges a message that waits behind the running turn.
func QueuedText(n int) string {
	return fmt.Sprintf("queued: %d waiting — answered when the running turn ends.", n)
}

// follow wants answers, notices and cards for conversations of allowed
// chats, from stream sequence from on, until ctx ends. An event whose
// messages could not be stored is read again until they are.
func (g *Gateway) follow(ctx context.Context, from uint64) {
	runs := map[string]*runView{}
	children := map[string]int64{} // a delegated conversation → its root's chat
	for ctx.Err() == nil {
		for env, err := range g.cfg.Log.Follow(ctx, events.Root+".conv.>", from) {
			if err != nil {
				if ctx.Err() == nil {
					g.cfg.Logger.Warn("telegram follow failed: resuming", "from", from, "error", err)
				}
				break
			}
			if err := g.apply(ctx, runs, children, env); err != nil {
				if ctx.Err() == nil {
					g.cfg.Logger.Error("telegram messages not stored: reading the event again", "subject", env.Subject, "seq", env.Seq, "error", err)
				}
				break
			}
			from = env.Seq + 1
			g.followed.Store(env.Seq)
		}
		sleep(ctx, g.cfg.PollEvery)
	}
}

// apply reacts to one conversation event. An error means a message it
// wants was not stored: the event is applied again (what was wanted of it
// is not wanted twice).
func (g *Gateway) apply(ctx context.Context, runs map[string]*runView, children map[string]int64, env events.Envelope) error {
	conv := events.ScopeOf(env.Subject).ID()
	chatID, ok := chatOf(conv)
	if !ok {
		return g.applyChild(ctx, children, conv, env)
	}
	if !g.allowed[chatID] {
		return nil
	}
	switch env.Type {
	case events.TypeRunStarted, events.TypeModelCalled, events.TypeToolCompleted, events.TypeRunFinished, events.TypeApprovalRequested, events.TypeApprovalDecided,
		events.TypeQuestionAsked, events.TypeQuestionAnswered, events.TypeQuestionExpired:
	default:
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		g.cfg.Logger.Warn("telegram: undecodable event skipped", "subject", env.Subject, "seq", env.Seq, "error", err)
		return nil
	}
	ref := "conv:" + strconv.FormatUint(env.Seq, 10)
	r := runs[conv]
	if r == nil {
		r = &runView{}
		runs[conv] = r
	}
	switch e := e.(type) {
	case *events.RunStarted:
		if !r.open {
			g.setTyping(chatID, 1)
		}
		*r = runView{open: true}
		if time.Since(env.Time) < 10*time.Second { // not one read again at a start
			g.chatAction(ctx, chatID)
		}
	case *events.ModelCalled, *events.ToolCompleted:
		r.fold(e)
	case *events.ApprovalRequested:
		return g.sendCard(ctx, chatID, ref, e)
	case *events.ApprovalDecided:
		return g.settle(ctx, e.ApprovalID, e.Decision, decidedLine(e), ref)
	case *events.QuestionAsked:
		if g.cfg.Questions != nil {
			return g.sendQuestion(ctx, chatID, ref, e)
		}
	case *events.QuestionAnswered:
		return g.settle(ctx, e.QuestionID, "answered", answeredLine(e), ref)
	case *events.QuestionExpired:
		if e.Withdrawn {
			return g.settle(ctx, e.QuestionID, events.DecisionWithdrawn, withdrawnLine, ref)
		}
		return g.settle(ctx, e.QuestionID, "expired", expiredLine, ref)
	case *events.RunFinished:
		if !r.open {
			// The run began before the follower's start: read it back.
			rebuilt, err := g.runFromLog(ctx, env)
			if err != nil {
				return err
			}
			*r = rebuilt
		} else {
			g.setTyping(chatID, -1)
		}
		if err := g.wantAnswer(ctx, chatID, ref, env.Seq, r, e); err != nil {
			return err
		}
		delete(runs, conv)
	}
	return nil
}

// fold adds a model call or a tool's completion to the run's view.
func (r *runView) fold(e events.Event) {
	if _, ok := e.(*events.RunStarted); ok {
		*r = runView{open: true}
		return
	}
	r.Fold(e)
}

// runFromLog folds the run that finished at env from its conversation's
// events: the follower started after it began.
func (g *Gateway) runFromLog(ctx context.Context, env events.Envelope) (runView, error) {
	var r runView
	for e, err := range g.cfg.Log.Read(ctx, events.ScopeOf(env.Subject).Filter(), 0) {
		if err != nil {
			return r, fmt.Errorf("telegram: read the run back: %w", err)
		}
		if e.Seq >= env.Seq {
			break
		}
		switch e.Type {
		case events.TypeRunStarted, events.TypeModelCalled, events.TypeToolCompleted:
		default:
			continue
		}
		p, err := e.Decode()
		if err != nil {
			continue
		}
		r.fold(p)
	}
	return r, nil
}

// wantAnswer wants a finished run's reply, its notice and its files.
func (g *Gateway) wantAnswer(ctx context.Context, chatID int64, ref string, seq uint64, r *runView, e *events.RunFinished) error {
	text := r.Text
	end := r.Ending(e)
	if notice := end.Notice(g.cfg.Home); notice != "" {
		if end.Kind() != loop.EndAsks {
			notice += " Spend: " + end.Spend() + "."
		}
		text = strings.TrimSpace(text + "\n\n" + notice)
	}
	text, files := g.artifactLines(text)
	if text != "" {
		if err := g.wantText(ctx, chatID, events.SendReply, ref, seq, text); err != nil {
			return err
		}
	}
	for _, id := range files {
		if err := g.want(ctx, events.TelegramSendWanted{Chat: chatID, Kind: events.SendFile, Ref: ref + "#file:" + id, SourceSeq: seq, Artifact: id}); err != nil {
			return err
		}
	}
	return nil
}

// applyChild sends the approval cards of a conversation delegated from a
// chat's conversation to that chat: a child's ask-reasons still ask, and
// they surface where the owner talks (R-DEL). The cards and questions of
// every other conversation (web, API, jobs) go to every allowed chat
// (R-X-3).
func (g *Gateway) applyChild(ctx context.Context, children map[string]int64, conv string, env events.Envelope) error {
	switch env.Type {
	case events.TypeConversationOpened, events.TypeApprovalRequested, events.TypeApprovalDecided,
		events.TypeQuestionAsked, events.TypeQuestionAnswered, events.TypeQuestionExpired:
	case events.TypeConversationClosed:
		delete(children, conv)
		return nil
	default:
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		g.cfg.Logger.Warn("telegram: undecodable event skipped", "subject", env.Subject, "seq", env.Seq, "error", err)
		return nil
	}
	ref := "conv:" + strconv.FormatUint(env.Seq, 10)
	switch e := e.(type) {
	case *events.ConversationOpened:
		if root, ok := chatOf(e.RootID); ok && g.allowed[root] {
			if len(children) >= maxTracked {
				for old := range children { // any one: the oldest have most likely ended
					delete(children, old)
					break
				}
			}
			children[conv] = root
		}
	case *events.ApprovalRequested:
		if chatID, ok := children[conv]; ok {
			return g.sendCard(ctx, chatID, ref, e)
		}
		// Not a Telegram chat's: the owner may be anywhere (R-X-3).
		return g.broadcastCard(ctx, ref, e)
	case *events.ApprovalDecided:
		return g.settle(ctx, e.ApprovalID, e.Decision, decidedLine(e), ref)
	case *events.QuestionAsked:
		// Only a root conversation asks the owner (a delegated one's
		// question goes to its parent): a web, API or job one's goes to
		// every allowed chat.
		if g.cfg.Questions != nil {
			return g.broadcastQuestion(ctx, ref, e)
		}
	case *events.QuestionAnswered:
		return g.settle(ctx, e.QuestionID, "answered", answeredLine(e), ref)
	case *events.QuestionExpired:
		if e.Withdrawn {
			return g.settle(ctx, e.QuestionID, events.DecisionWithdrawn, withdrawnLine, ref)
		}
		return g.settle(ctx, e.QuestionID, "expired", expiredLine, ref)
	}
	return nil
}

// chatOf parses "telegram-<chat>-<YYYYMMDD>", the master's daily
// conversation of a chat (inbound.DailyID), or "…-<n>", the day's next
// conversation after the owner closed one.
func chatOf(conv string) (int64, bool) {
	m := chatConv.FindStringSubmatch(conv)
	if m == nil {
		return 0, false
	}
	id, err := strconv.ParseInt(m[1], 10, 64)
	return id, err == nil
}

var chatConv = regexp.MustCompile(`^telegram-(-?[0-9]+)-[0-9]{8}(?:-[0-9]+)?$`)

func approvalText(e *events.ApprovalRequested) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Approval needed: %s\n", e.Tool)
	if src := loop.ToolSource(e.Tool); src != "" {
		fmt.Fprintf(&b, "(%s)\n", src)
	}
	// Commands and texts as they are, the rest as JSON without escapes:
	// the owner reads what would run (plain text: nothing to escape).
	rest, texts := loop.ReadableArgs(e.Arguments)
	var args strings.Builder
	for _, t := range texts {
		fmt.Fprintf(&args, "%s:\n%s\n", t.Name, t.Text)
	}
	if rest != "" {
		args.WriteString(rest)
	}
	a := strings.TrimSuffix(args.String(), "\n")
	if n := utf16Len(a); n > 3000 {
		a = cutUTF16(a, 3000) + "\n…"
	}
	fmt.Fprintf(&b, "%s\n", a)
	if e.Reason != "" {
		fmt.Fprintf(&b, "Reason: %s\n", e.Reason)
	}
	if !e.ExpiresAt.IsZero() {
		fmt.Fprintf(&b, "Expires: %s", e.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return strings.TrimSpace(b.String())
}

func approvalKeyboard(id string) *inlineKeyboard {
	return &inlineKeyboard{Rows: [][]inlineButton{{
		{Text: "Approve", Data: callbackData(id, "approve")},
		{Text: "Always", Data: callbackData(id, "always")},
		{Text: "Deny", Data: callbackData(id, "deny")},
	}}}
}

// chatAction shows "typing…"; errors are ignored (emulators answer 500).
func (g *Gateway) chatAction(ctx context.Context, chatID int64) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = g.api.call(ctx, "sendChatAction", map[string]any{"chat_id": chatID, "action": "typing"}, nil)
}

func (g *Gateway) setTyping(chatID int64, delta int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := g.typing[chatID] + delta; n > 0 {
		g.typing[chatID] = n
	} else {
		delete(g.typing, chatID)
	}
}

// keepTyping renews "typing…" (it lasts 5 s) while a chat has a run open.
func (g *Gateway) keepTyping(ctx context.Context) {
	t := time.NewTicker(4 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g.mu.Lock()
		chats := make([]int64, 0, len(g.typing))
		for id := range g.typing {
			chats = append(chats, id)
		}
		g.mu.Unlock()
		for _, id := range chats {
			g.chatAction(ctx, id)
		}
	}
}

// Split cuts text into parts of at most limit UTF-16 units (Telegram's
// measure), at the last line break of a part when there is one in its
// second half, else at a rune boundary.
func Split(text string, limit int) []string {
	var parts []string
	for utf16Len(text) > limit {
		head := cutUTF16(text, limit)
		if i := strings.LastIndexByte(head, '\n'); i > 0 && utf16Len(head[:i]) >= limit/2 {
			parts = append(parts, head[:i])
			text = text[i+1:]
			continue
		}
		parts = append(parts, head)
		text = text[len(head):]
	}
	if text != "" || len(parts) == 0 {
		parts = append(parts, text)
	}
	return parts
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// cutUTF16 returns the longest prefix of s of at most limit UTF-16 units.
func cutUTF16(s string, limit int) string {
	n := 0
	for i, r := range s {
		w := utf16.RuneLen(r) // invalid UTF-8 ranges as U+FFFD: 1
		if n+w > limit {
			return s[:i]
		}
		n += w
	}
	return s
}

// fileLine is a reply line naming a canvas to send as a file.
var fileLine = regexp.MustCompile(`(?m)^[ \t]*FILE:[ \t]*artifact:([A-Za-z0-9][A-Za-z0-9_-]{0,127})[ \t]*\r?$\n?`)

// artifactLines takes the "FILE: artifact:<id>" lines out of a reply, in
// order, once each; without Config.Artifact they stay text.
func (g *Gateway) artifactLines(text string) (string, []string) {
	if g.cfg.Artifact == nil {
		return text, nil
	}
	var ids []string
	for _, m := range fileLine.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return strings.TrimSpace(fileLine.ReplaceAllString(text, "")), ids
}
