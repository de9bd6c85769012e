package projections

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	json "github.com/segmentio/encoding/json"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// Buckets of the chat projection: what a conversation's chat page shows.
// One head per conversation (ChatHead: the open run, the queue, what
// waits for the owner) and its items in the order the chat shows them
// under <conversation>\x00<big-endian index> (ChatItem), so an event
// rewrites the head and the one item it changed, never the whole chat;
// chat_calls maps <conversation>\x00<call id> to the index of the call's
// card, where its result lands.
const (
	bucketChatHeads = "chat_heads"
	bucketChatItems = "chat_items"
	bucketChatCalls = "chat_calls"
)

// Kinds of chat items.
const (
	// ChatUser is a user-role message: the owner's words, a team
	// delivery, a background task's notification, a harness reminder.
	ChatUser = "user"
	// ChatReply is a model reply's text.
	ChatReply = "reply"
	// ChatCall is one tool call with its result once it came.
	ChatCall = "call"
	// ChatShown is a reply that broke after its text reached the chat
	// (kept where it stood, marked interrupted; the model never reads it).
	ChatShown = "shown"
)

// harnessReminder starts the text of a reminder the harness sends as a
// user message; the chat shows it as a note. The owner's words never are
// one: the model reads them with that frame neutralised.
const harnessReminder = "[Harness reminder]"

// ChatItem is one element of the chat, as the events told it; how it
// looks is the page's business.
type ChatItem struct {
	Kind string `json:"kind"`
	// A user message: Text as received (Said, when set, is shown
	// instead: a fork's copy, or the words a hook withheld), the
	// attachments, the turn notes and canvas notes; Team or Task when
	// the team runtime or a background task delivered it; Note for a
	// harness reminder.
	Text        string                   `json:"text,omitempty"`
	Said        string                   `json:"said,omitempty"`
	Attachments []string                 `json:"attachments,omitempty"`
	Notes       string                   `json:"notes,omitempty"`
	Canvas      string                   `json:"canvas,omitempty"`
	Team        *events.TeamDelivery     `json:"team,omitempty"`
	TeamFlag    bool                     `json:"team_flag,omitempty"` // a fork's team message (Said holds its text)
	Task        *events.TaskNotification `json:"task,omitempty"`
	TaskFlag    bool                     `json:"task_flag,omitempty"` // a fork's task notification (Said holds its text)
	Note        bool                     `json:"note,omitempty"`
	// A reply: Stopped when the owner stopped it while it streamed.
	Stopped bool `json:"stopped,omitempty"`
	// A shown reply: Then is what the harness did next.
	Then string `json:"then,omitempty"`
	// A call: the model's request, the nested calls of a script still
	// running, and the result.
	Call   *events.ToolCallRequest `json:"call,omitempty"`
	Nested []events.NestedCall     `json:"nested,omitempty"`
	Result *ChatResult             `json:"result,omitempty"`
}

// ChatResult is a tool call's result as the chat shows it.
type ChatResult struct {
	Output   string                 `json:"output"`
	IsError  bool                   `json:"is_error,omitempty"`
	Outcome  string                 `json:"outcome,omitempty"`
	Delegate *events.DelegateResult `json:"delegate,omitempty"`
	Canvas   *events.CanvasRef      `json:"canvas,omitempty"`
	Parts    []events.ToolPart      `json:"parts,omitempty"`
	Meta     json.RawMessage        `json:"meta,omitempty"`
}

// ChatPending is a message stored and not yet in the chat's history: a
// queued message, a steer waiting for a tool boundary, or one a stop
// dropped.
type ChatPending struct {
	EventID string   `json:"event_id"`
	Seq     uint64   `json:"seq"`
	Item    ChatItem `json:"item"`
}

// ChatApproval is a gated call of the open run waiting for the owner.
type ChatApproval struct {
	ID        string    `json:"id"`
	CallID    string    `json:"call_id"`
	Tool      string    `json:"tool"`
	Reason    string    `json:"reason,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ChatQuestion is an ask_user call of the open run waiting for an answer.
type ChatQuestion struct {
	ID        string    `json:"id"`
	CallID    string    `json:"call_id"`
	Text      string    `json:"text"`
	Choices   []string  `json:"choices,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ChatHead is a conversation's chat apart from its items.
type ChatHead struct {
	Conversation string `json:"conversation"`
	// Seq is the stream sequence of the conversation's last event.
	Seq uint64 `json:"seq"`
	// Items is how many items the chat holds (indexes 0..Items-1).
	Items int `json:"items"`
	// Parent is the conversation that delegated this one.
	Parent string `json:"parent,omitempty"`
	// OpenRun is the run started and not finished; Step its last step;
	// RunFrom the index of its first item.
	OpenRun string `json:"open_run,omitempty"`
	Step    int    `json:"step,omitempty"`
	RunFrom int    `json:"run_from,omitempty"`
	// Queued wait for a run, Steers for the open run's next tool
	// boundary; Dropped were dropped by a stop, never answered.
	Queued  []ChatPending `json:"queued,omitempty"`
	Steers  []ChatPending `json:"steers,omitempty"`
	Dropped []ChatPending `json:"dropped,omitempty"`
	// Notices are stopped tasks' notifications that came while a run was
	// open: they join the chat when it ends.
	Notices []ChatItem `json:"notices,omitempty"`
	// Closed: the conversation is closed (a task's end is then told in
	// the chat, never queued).
	Closed bool `json:"closed,omitempty"`
	// Approvals and Questions are the open run's, undecided.
	Approvals []ChatApproval `json:"approvals,omitempty"`
	Questions []ChatQuestion `json:"questions,omitempty"`
	// Asked is what the last model reply asked with ask_user ("" none).
	Asked string `json:"asked,omitempty"`
}

// Chat projects what each conversation's chat page shows (issue 33): the
// same fold of the conversation's events the turn's state makes of its
// history, kept as the page's items.
type Chat struct{}

var _ Projection = Chat{}

func (Chat) Name() string { return "chat" }

func (Chat) Buckets() []string { return []string{bucketChatHeads, bucketChatItems, bucketChatCalls} }

// Wants every event of a conversation: the head's Seq is its last.
func (Chat) Wants(kind, _ string) bool { return kind == "conv" }

func (Chat) Apply(tx *Tx, env events.Envelope) error {
	scope := events.ScopeOf(env.Subject)
	if scope.Kind() != "conv" {
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	c := &chatTx{tx: tx, conv: scope.ID()}
	if _, err := tx.getJSON(tx.Bucket([]byte(bucketChatHeads)), []byte(c.conv), &c.head); err != nil {
		return err
	}
	c.head.Conversation = c.conv
	if err := c.apply(env, e); err != nil {
		return fmt.Errorf("chat %s: %w", c.conv, err)
	}
	if env.Seq != 0 {
		c.head.Seq = env.Seq
	}
	return tx.putJSON(tx.Bucket([]byte(bucketChatHeads)), []byte(c.conv), &c.head)
}

// chatTx is one event's change of one conversation's chat.
type chatTx struct {
	tx   *Tx
	conv string
	head ChatHead
}

func chatItemKey(conv string, i int) []byte {
	k := make([]byte, 0, len(conv)+5)
	k = append(k, conv...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, uint32(i))
}

func chatCallKey(conv, call string) []byte { return []byte(conv + "\x00" + call) }

func (c *chatTx) items() *bbolt.Bucket { return c.tx.Bucket([]byte(bucketChatItems)) }
func (c *chatTx) calls() *bbolt.Bucket { return c.tx.Bucket([]byte(bucketChatCalls)) }

// add appends it to the chat (a call's card is found by its id after).
func (c *chatTx) add(it ChatItem) error {
	i := c.head.Items
	c.head.Items++
	if it.Call != nil {
		if err := c.calls().Put(chatCallKey(c.conv, it.Call.ID), binary.BigEndian.AppendUint32(nil, uint32(i))); err != nil {
			return err
		}
	}
	return c.tx.putJSON(c.items(), chatItemKey(c.conv, i), &it)
}

// item reads item i.
func (c *chatTx) item(i int) (ChatItem, error) {
	var it ChatItem
	found, err := c.tx.getJSON(c.items(), chatItemKey(c.conv, i), &it)
	if err == nil && !found {
		err = fmt.Errorf("item %d missing", i)
	}
	return it, err
}

// card is the index of call's card, if the chat holds one.
func (c *chatTx) card(call string) (int, bool) {
	v := c.calls().Get(chatCallKey(c.conv, call))
	if len(v) != 4 {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(v)), true
}

// update rewrites call's card with change, if the chat holds it.
func (c *chatTx) update(call string, change func(*ChatItem)) error {
	i, ok := c.card(call)
	if !ok {
		return nil
	}
	it, err := c.item(i)
	if err != nil {
		return err
	}
	change(&it)
	return c.tx.putJSON(c.items(), chatItemKey(c.conv, i), &it)
}

// reply appends a model reply as the history does: its text, then a card
// per tool call.
func (c *chatTx) reply(text string, calls []events.ToolCallRequest, stopped bool) error {
	c.head.Asked = askedIn(calls)
	if text != "" {
		if err := c.add(ChatItem{Kind: ChatReply, Text: text, Stopped: stopped}); err != nil {
			return err
		}
	}
	for _, call := range calls {
		if err := c.add(ChatItem{Kind: ChatCall, Call: &call}); err != nil {
			return err
		}
	}
	return nil
}

// askedIn is the question of an ask_user call among calls ("" none).
func askedIn(calls []events.ToolCallRequest) string {
	for _, call := range calls {
		var q struct {
			Question string `json:"question"`
		}
		if call.Name == "ask_user" && json.Unmarshal(call.Arguments, &q) == nil {
			return q.Question
		}
	}
	return ""
}

func (c *chatTx) apply(env events.Envelope, e events.Event) error {
	h := &c.head
	switch e := e.(type) {
	case *events.ConversationOpened:
		h.Parent = e.ParentConversation
	case *events.ConversationClosed:
		h.Closed = true
	case *events.ConversationForked:
		return c.fork(e)
	case *events.MessageReceived:
		it := ChatItem{Kind: ChatUser, Text: e.Text, Attachments: e.Attachments, Team: e.Team}
		if e.TurnNotes != nil {
			it.Notes = e.TurnNotes.Text
		}
		if e.CanvasNotes != nil {
			it.Canvas = e.CanvasNotes.Text
		}
		if e.Team != nil {
			it.Text, it.Attachments = "", nil
		}
		h.Queued = append(h.Queued, ChatPending{EventID: env.ID, Seq: env.Seq, Item: it})
	case *events.TaskNotification:
		it := ChatItem{Kind: ChatUser, Task: e}
		if e.StoppedBy != "" || h.Closed {
			if h.OpenRun != "" {
				h.Notices = append(h.Notices, it)
				return nil
			}
			return c.add(it)
		}
		h.Queued = append(h.Queued, ChatPending{EventID: env.ID, Seq: env.Seq, Item: it})
	case *events.SteerReceived:
		it := ChatItem{Kind: ChatUser, Text: e.Text, Team: e.Team}
		if e.TurnNotes != nil {
			it.Notes = e.TurnNotes.Text
		}
		if e.CanvasNotes != nil {
			it.Canvas = e.CanvasNotes.Text
		}
		if e.Team != nil {
			it.Text = ""
		}
		h.Steers = append(h.Steers, ChatPending{EventID: env.ID, Seq: env.Seq, Item: it})
	case *events.SteersApplied:
		kept := h.Steers[:0]
		for _, p := range h.Steers {
			switch {
			case slices.Contains(e.SteerIDs, p.EventID):
				it := p.Item
				if e.Withheld {
					it = withheldItem(it)
				}
				if err := c.add(it); err != nil {
					return err
				}
			default:
				kept = append(kept, p)
			}
		}
		h.Steers = kept
	case *events.RunStopRequested:
		c.drop(e.Dropped)
	case *events.RunStarted:
		h.OpenRun, h.Step, h.RunFrom = e.RunID, 0, h.Items
		h.Approvals, h.Questions = nil, nil
		for _, q := range h.Queued {
			if err := c.add(q.Item); err != nil {
				return err
			}
		}
		h.Queued = nil
	case *events.RunFinished:
		if h.OpenRun == e.RunID {
			return c.finish(e)
		}
	case *events.ModelCalled:
		if !e.InTurn() {
			return nil
		}
		if e.RunID == h.OpenRun && e.Step > h.Step {
			h.Step = e.Step
		}
		if !e.Stopped && e.Error != "" && e.Text != "" {
			return c.add(ChatItem{Kind: ChatShown, Text: e.Text, Then: "the model call failed: " + e.Error})
		}
		if e.Stopped && e.Text != "" {
			if err := c.reply(e.Text, nil, true); err != nil {
				return err
			}
		}
		if e.Error == "" {
			return c.reply(e.Text, e.ToolCalls, false)
		}
	case *events.ModelRetried:
		if e.Interrupted && e.Text != "" {
			then := fmt.Sprintf("retried on %s (attempt %d)", e.Route, e.Attempt)
			if e.Error != "" {
				then += " after: " + e.Error
			}
			return c.add(ChatItem{Kind: ChatShown, Text: e.Text, Then: then})
		}
	case *events.RouteFallback:
		if e.Interrupted && e.Text != "" {
			return c.add(ChatItem{Kind: ChatShown, Text: e.Text, Then: fmt.Sprintf("moved from %s to %s after: %s", e.From, e.To, e.Error)})
		}
	case *events.GuardReminded:
		return c.add(ChatItem{Kind: ChatUser, Text: e.Text, Note: strings.HasPrefix(e.Text, harnessReminder)})
	case *events.NestedCall:
		if e.RunID != h.OpenRun {
			return nil
		}
		return c.update(e.CallID, func(it *ChatItem) {
			// Stored as each call ends; kept in the order the script wrote them.
			i, _ := slices.BinarySearchFunc(it.Nested, e.N, func(x events.NestedCall, k int) int { return x.N - k })
			it.Nested = slices.Insert(it.Nested, i, *e)
		})
	case *events.ToolCompleted:
		h.Approvals = slices.DeleteFunc(h.Approvals, func(a ChatApproval) bool { return a.CallID == e.CallID })
		h.Questions = slices.DeleteFunc(h.Questions, func(q ChatQuestion) bool { return q.CallID == e.CallID })
		r := &ChatResult{Output: e.Output, IsError: e.IsError, Outcome: e.Outcome, Delegate: e.Delegate, Canvas: e.Canvas, Parts: e.Parts}
		if len(e.Meta) > 0 {
			r.Meta, _ = json.Marshal(e.Meta)
		}
		return c.update(e.CallID, func(it *ChatItem) { it.Result, it.Nested = r, nil })
	case *events.ApprovalRequested:
		h.Approvals = slices.DeleteFunc(h.Approvals, func(a ChatApproval) bool { return a.CallID == e.CallID })
		h.Approvals = append(h.Approvals, ChatApproval{ID: e.ApprovalID, CallID: e.CallID, Tool: e.Tool, Reason: e.Reason, ExpiresAt: e.ExpiresAt})
	case *events.ApprovalDecided:
		h.Approvals = slices.DeleteFunc(h.Approvals, func(a ChatApproval) bool { return a.ID == e.ApprovalID })
	case *events.QuestionAsked:
		h.Questions = slices.DeleteFunc(h.Questions, func(q ChatQuestion) bool { return q.CallID == e.CallID })
		h.Questions = append(h.Questions, ChatQuestion{ID: e.QuestionID, CallID: e.CallID, Text: e.Question, Choices: e.Choices, ExpiresAt: e.ExpiresAt})
	case *events.QuestionAnswered:
		h.Questions = slices.DeleteFunc(h.Questions, func(q ChatQuestion) bool { return q.ID == e.QuestionID })
	case *events.QuestionExpired:
		h.Questions = slices.DeleteFunc(h.Questions, func(q ChatQuestion) bool { return q.ID == e.QuestionID })
	}
	return nil
}

// withheldItem is a user message whose words a UserPromptSubmit hook
// blocked: its notes stay, its words do not.
func withheldItem(it ChatItem) ChatItem {
	return ChatItem{Kind: ChatUser, Said: "(withheld by the owner's hook)", Notes: it.Notes, Canvas: it.Canvas}
}

// drop moves the waiting messages a stop dropped to the dropped list.
func (c *chatTx) drop(ids []string) {
	if len(ids) == 0 {
		return
	}
	keep := func(ps []ChatPending) []ChatPending {
		kept := ps[:0]
		for _, p := range ps {
			if slices.Contains(ids, p.EventID) {
				c.head.Dropped = append(c.head.Dropped, p)
			} else {
				kept = append(kept, p)
			}
		}
		return kept
	}
	c.head.Queued = keep(c.head.Queued)
	c.head.Steers = keep(c.head.Steers)
}

// finish closes the open run as the turn's state does: the opening words
// a hook blocked withheld, the notices shown, the steers that never
// reached a tool boundary queued in the order they were stored.
func (c *chatTx) finish(e *events.RunFinished) error {
	h := &c.head
	if e.Status == events.RunHalted && e.Reason == "hook" && h.Step == 0 {
		for i := h.RunFrom; i < h.Items; i++ {
			it, err := c.item(i)
			if err != nil {
				return err
			}
			if it.Kind != ChatUser {
				continue
			}
			it = withheldItem(it)
			if err := c.tx.putJSON(c.items(), chatItemKey(c.conv, i), &it); err != nil {
				return err
			}
		}
	}
	h.OpenRun, h.Step, h.Approvals, h.Questions = "", 0, nil, nil
	for _, n := range h.Notices {
		if err := c.add(n); err != nil {
			return err
		}
	}
	h.Notices = nil
	if len(h.Steers) > 0 {
		h.Queued = append(h.Queued, h.Steers...)
		if !slices.ContainsFunc(h.Queued, func(p ChatPending) bool { return p.Seq == 0 }) {
			slices.SortStableFunc(h.Queued, func(a, b ChatPending) int {
				switch {
				case a.Seq < b.Seq:
					return -1
				case a.Seq > b.Seq:
					return 1
				}
				return 0
			})
		}
	}
	h.Steers = nil
	return nil
}

// forkedMessage is a message of the history conversation_forked carries
// (the turn's state as JSON).
type forkedMessage struct {
	Role       string                   `json:"role"`
	Text       string                   `json:"text"`
	Said       string                   `json:"said"`
	Notes      string                   `json:"notes"`
	Canvas     string                   `json:"canvas"`
	Team       bool                     `json:"team"`
	Task       bool                     `json:"task"`
	Stopped    bool                     `json:"stopped"`
	ToolCalls  []events.ToolCallRequest `json:"tool_calls"`
	ToolCallID string                   `json:"tool_call_id"`
	IsError    bool                     `json:"is_error"`
	Outcome    string                   `json:"outcome"`
	Delegate   *events.DelegateResult   `json:"delegate"`
	CanvasRef  *events.CanvasRef        `json:"canvas_ref"`
	Parts      []events.ToolPart        `json:"parts"`
	Meta       json.RawMessage          `json:"meta"`
	// Attachments are kept for the page's images.
	Attachments []string `json:"attachments"`
}

// fork replaces the chat with the history the fork starts from, its run
// open; nothing of the original's queue, approvals or questions.
func (c *chatTx) fork(e *events.ConversationForked) error {
	var st struct {
		Messages []forkedMessage `json:"messages"`
		RunFrom  int             `json:"run_from"`
	}
	if err := json.Unmarshal(e.State, &st); err != nil {
		return fmt.Errorf("conversation_forked: state: %w", err)
	}
	prefix := []byte(c.conv + "\x00")
	for _, b := range []*bbolt.Bucket{c.items(), c.calls()} {
		if err := deletePrefix(b, prefix); err != nil {
			return err
		}
	}
	c.head = ChatHead{Conversation: c.conv, OpenRun: e.RunID, Step: e.From.Step - 1}
	from := -1
	for i, m := range st.Messages {
		if i == st.RunFrom {
			from = c.head.Items
		}
		switch m.Role {
		case "user":
			said := m.Said
			if said == "" {
				said = m.Text
			}
			err := c.add(ChatItem{Kind: ChatUser, Said: said, Notes: m.Notes, Canvas: m.Canvas, Attachments: m.Attachments,
				TeamFlag: m.Team, TaskFlag: m.Task, Note: strings.HasPrefix(m.Text, harnessReminder)})
			if err != nil {
				return err
			}
		case "assistant":
			if err := c.reply(m.Text, m.ToolCalls, m.Stopped); err != nil {
				return err
			}
		case "tool":
			r := &ChatResult{Output: m.Text, IsError: m.IsError, Outcome: m.Outcome, Delegate: m.Delegate, Canvas: m.CanvasRef, Parts: m.Parts, Meta: m.Meta}
			if err := c.update(m.ToolCallID, func(it *ChatItem) { it.Result = r }); err != nil {
				return err
			}
		}
	}
	if from < 0 {
		from = c.head.Items
	}
	c.head.RunFrom = from
	return nil
}

// GetChat reads conversation id's chat: its head and every item, in a
// read transaction of its own; ErrNotFound when the projection has no
// event of it.
func GetChat(db *bbolt.DB, id string) (ChatHead, []ChatItem, error) {
	var head ChatHead
	var items []ChatItem
	err := db.View(func(tx *bbolt.Tx) error {
		var err error
		if head, err = getTx[ChatHead](&Tx{Tx: tx}, bucketChatHeads, id); err != nil {
			return err
		}
		items = make([]ChatItem, 0, head.Items)
		b := tx.Bucket([]byte(bucketChatItems))
		prefix := []byte(id + "\x00")
		cur := b.Cursor()
		for k, v := cur.Seek(prefix); k != nil && len(k) == len(prefix)+4 && string(k[:len(prefix)]) == string(prefix); k, v = cur.Next() {
			var it ChatItem
			if err := json.Unmarshal(v, &it); err != nil {
				return fmt.Errorf("decode %q: %w", k, err)
			}
			items = append(items, it)
		}
		if len(items) != head.Items {
			return fmt.Errorf("%d items, head says %d", len(items), head.Items)
		}
		return nil
	})
	if err != nil {
		return ChatHead{}, nil, fmt.Errorf("get chat %s: %w", id, err)
	}
	return head, items, nil
}

// GetChatItem reads item i of conversation id's chat (a live patch).
func GetChatItem(db *bbolt.DB, id string, i int) (ChatItem, error) {
	return get[ChatItem](db, bucketChatItems, "chat item", string(chatItemKey(id, i)))
}
