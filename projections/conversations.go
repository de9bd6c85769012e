package projections

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// Conversation statuses.
const (
	ConversationIdle             = "idle"
	ConversationRunning          = "running"           // a run started and not finished
	ConversationAwaitingApproval = "awaiting_approval" // a run paused on an approval
	ConversationAwaitingAnswer   = "awaiting_answer"   // a run paused on a question to the owner (ask_user)
	ConversationHalted           = "halted"            // the last run halted (max_steps, loop, cost_cap), until the next message
	ConversationFailed           = "failed"            // the last run failed (model_error, …), until the next message
	ConversationStopped          = "stopped"           // the owner stopped the last run, until the next message
	ConversationClosed           = "closed"
	// ConversationParked: an event of the conversation's log cannot be
	// decoded by this build, so no turn runs on it (R-X-4).
	ConversationParked = "parked"
)

// titleRunes bounds a title derived from the first message.
const titleRunes = 80

const (
	bucketConversations = "conversations"            // id → Conversation
	bucketConvByUpdated = "conversations_by_updated" // timeKey(updated) id → empty
	// bucketConvOpen indexes the conversations with work after a restart
	// (Recoverable): id → empty. Start reads it, not every conversation.
	bucketConvOpen = "conversations_open"
)

// Conversation is the list view of one conversation.
type Conversation struct {
	ID      string `json:"id"`
	Agent   string `json:"agent,omitempty"`
	Channel string `json:"channel,omitempty"`
	Day     string `json:"day,omitempty"`
	// Title is the opening title, else the first message on one line, cut
	// to 80 runes.
	Title       string     `json:"title,omitempty"`
	RootID      string     `json:"root_id,omitempty"`
	RootSource  string     `json:"root_source,omitempty"`
	ParentRunID string     `json:"parent_run_id,omitempty"`
	Status      string     `json:"status"`
	Opened      time.Time  `json:"opened"`
	Updated     time.Time  `json:"updated"` // time of its latest event
	Closed      *time.Time `json:"closed,omitempty"`
	CloseReason string     `json:"close_reason,omitempty"`
	Messages    int        `json:"messages"`
	LastRunID   string     `json:"last_run_id,omitempty"`
	// ActiveRuns are the runs started and not finished, in start order.
	ActiveRuns []string `json:"active_runs,omitempty"`
	// Queued counts owner messages stored since the last run started: not
	// yet taken by a run.
	Queued int `json:"queued,omitempty"`
	// PendingApprovals are undecided approvals, oldest first; a delegation
	// root lists its children's too (R-DEL: they surface where the owner
	// is), each naming its conversation.
	PendingApprovals []PendingApproval `json:"pending_approvals,omitempty"`
	// PendingQuestion is the question (ask_user) the open run waits on.
	PendingQuestion *PendingQuestion `json:"pending_question,omitempty"`
	// Halted is the reason the last run halted, until the next message or
	// run.
	Halted string `json:"halted,omitempty"`
	// Ended is how the last run ended when it did not end done, until the
	// next message or run: what status failed or halted stands for.
	Ended *RunEnded `json:"ended,omitempty"`
	// LastSeq is the stream sequence of the conversation's latest event:
	// what its single writer expects next.
	LastSeq uint64 `json:"last_seq"`
	// Parked names the first event of the conversation this build cannot
	// decode: no turn runs on it (status parked) until a build that can.
	Parked *ParkedEvent `json:"parked,omitempty"`
	// ForkedFrom is the conversation, run and step a fork was copied from.
	ForkedFrom *events.ForkOrigin `json:"forked_from,omitempty"`
}

// RunEnded is a run_finished that was not done.
type RunEnded struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"` // events.RunHalted, events.RunFailed, events.RunStopped
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	By     string `json:"by,omitempty"` // who stopped a stopped run
}

// Conversations projects conversation events into Conversation views,
// indexed by update time.
type Conversations struct{}

var _ Projection = Conversations{}

func (Conversations) Name() string { return "conversations" }

// Wants: every conversation event.
func (Conversations) Wants(kind, _ string) bool { return kind == "conv" }

// Version 2 added bucketConvOpen, 3 bucketTasks, 4 bucketTasksRunning: an
// older database's
// conversations are projected again (in the background) when this build
// opens it.
func (Conversations) Version() int { return 4 }

// PendingApproval is an approval waiting for the owner.
type PendingApproval struct {
	ID        string          `json:"id"`
	RunID     string          `json:"run_id"`
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Reason    string          `json:"reason,omitempty"`
	ExpiresAt time.Time       `json:"expires_at"`
	// Conversation and Agent name the delegated child that asked, when it
	// is not the conversation listing it.
	Conversation string `json:"conversation,omitempty"`
	Agent        string `json:"agent,omitempty"`
}

// PendingQuestion is a question waiting for the owner's answer.
type PendingQuestion struct {
	ID        string    `json:"id"`
	Question  string    `json:"question"`
	Choices   []string  `json:"choices"` // [] when none: a free answer
	ExpiresAt time.Time `json:"expires_at"`
	RunID     string    `json:"run_id"`
	CallID    string    `json:"call_id"`
}

// bucketApprovals maps approval id → conversation id; bucketQuestions
// question id → conversation id; bucketTasks background task id →
// conversation id; bucketTasksRunning the same for the tasks whose start
// has no end yet (LeftTasks).
const (
	bucketApprovals    = "approvals"
	bucketQuestions    = "questions"
	bucketTasks        = "tasks"
	bucketTasksRunning = "tasks_running"
)

func (Conversations) Buckets() []string {
	return []string{bucketConversations, bucketConvByUpdated, bucketApprovals, bucketConvOpen, bucketQuestions, bucketTasks, bucketTasksRunning}
}

// FindTask returns the conversation a background task belongs to.
func FindTask(db *bbolt.DB, taskID string) (string, error) {
	return findIn(db, bucketTasks, taskID)
}

// findIn returns the conversation id key maps to in bucket.
func findIn(db *bbolt.DB, bucket, key string) (string, error) {
	var conv string
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return ErrNotFound
		}
		v := b.Get([]byte(key))
		if v == nil {
			return ErrNotFound
		}
		conv = string(v)
		return nil
	})
	return conv, err
}

// FindQuestion returns the conversation a question belongs to.
func FindQuestion(db *bbolt.DB, questionID string) (string, error) {
	var conv string
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketQuestions))
		if b == nil {
			return ErrNotFound
		}
		v := b.Get([]byte(questionID))
		if v == nil {
			return ErrNotFound
		}
		conv = string(v)
		return nil
	})
	return conv, err
}

// FindApproval returns the conversation an approval belongs to.
func FindApproval(db *bbolt.DB, approvalID string) (string, error) {
	var conv string
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketApprovals))
		if b == nil {
			return ErrNotFound
		}
		v := b.Get([]byte(approvalID))
		if v == nil {
			return ErrNotFound
		}
		conv = string(v)
		return nil
	})
	return conv, err
}

func (Conversations) Apply(tx *Tx, env events.Envelope) error {
	scope := events.ScopeOf(env.Subject)
	if scope.Kind() != "conv" || scope.ID() == "" {
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	id := scope.ID()
	convs, index := tx.Bucket([]byte(bucketConversations)), tx.Bucket([]byte(bucketConvByUpdated))
	c := Conversation{ID: id, Opened: env.Time}
	found, err := tx.getJSON(convs, []byte(id), &c)
	if err != nil {
		return err
	}
	if found {
		if err := tx.deleteKey(index, append(timeKey(c.Updated), id...)); err != nil {
			return err
		}
	}
	switch e := e.(type) {
	case *events.ConversationOpened:
		c.Agent, c.Channel, c.Day = e.Agent, e.Channel, e.Day
		c.RootID, c.RootSource, c.ParentRunID = e.RootID, e.RootSource, e.ParentRunID
		c.Opened, c.ForkedFrom = env.Time, e.ForkedFrom
		if e.Title != "" {
			c.Title = e.Title
		}
	case *events.MessageReceived:
		c.Messages++
		c.Queued++
		c.Halted, c.Ended = "", nil
		if c.Title == "" {
			c.Title = truncate(oneLine(e.Text), titleRunes)
		}
	case *events.TaskStarted:
		if err := tx.Bucket([]byte(bucketTasks)).Put([]byte(e.TaskID), []byte(id)); err != nil {
			return err
		}
		if err := tx.Bucket([]byte(bucketTasksRunning)).Put([]byte(e.TaskID), []byte(id)); err != nil {
			return err
		}
	case *events.TaskNotification:
		if err := tx.Bucket([]byte(bucketTasksRunning)).Delete([]byte(e.TaskID)); err != nil {
			return err
		}
		if e.StoppedBy == "" && c.Closed == nil { // a stopped task's end, or a closed conversation's, opens no round
			c.Queued++ // a background command ended: it opens the next round
			c.Halted, c.Ended = "", nil
		}
	case *events.RunStopRequested:
		c.Queued = max(0, c.Queued-len(e.Dropped)) // dropped: never answered
	case *events.RunStarted:
		c.LastRunID = e.RunID
		c.Queued, c.Halted, c.Ended = 0, "", nil
		if !slices.Contains(c.ActiveRuns, e.RunID) {
			c.ActiveRuns = append(c.ActiveRuns, e.RunID)
		}
		if c.Agent == "" {
			c.Agent = e.Agent
		}
	case *events.RunFinished:
		c.ActiveRuns = slices.DeleteFunc(c.ActiveRuns, func(id string) bool { return id == e.RunID })
		if len(c.ActiveRuns) == 0 {
			c.ActiveRuns = nil
		}
		c.Halted, c.Ended = "", nil
		if e.Status == events.RunHalted {
			c.Halted = e.Reason
		}
		if e.Status != events.RunDone {
			c.Ended = &RunEnded{RunID: e.RunID, Status: e.Status, Reason: e.Reason, Error: e.Error, By: e.By}
		}
		c.PendingApprovals = slices.DeleteFunc(c.PendingApprovals, func(a PendingApproval) bool { return a.RunID == e.RunID })
		if len(c.PendingApprovals) == 0 {
			c.PendingApprovals = nil
		}
		if c.PendingQuestion != nil && c.PendingQuestion.RunID == e.RunID {
			c.PendingQuestion = nil
		}
	case *events.QuestionAsked:
		c.PendingQuestion = &PendingQuestion{ID: e.QuestionID, Question: e.Question, Choices: append([]string{}, e.Choices...),
			ExpiresAt: e.ExpiresAt, RunID: e.RunID, CallID: e.CallID}
		if err := tx.Bucket([]byte(bucketQuestions)).Put([]byte(e.QuestionID), []byte(id)); err != nil {
			return err
		}
	case *events.QuestionAnswered:
		if c.PendingQuestion != nil && c.PendingQuestion.ID == e.QuestionID {
			c.PendingQuestion = nil
		}
	case *events.QuestionExpired:
		if c.PendingQuestion != nil && c.PendingQuestion.ID == e.QuestionID {
			c.PendingQuestion = nil
		}
	case *events.ApprovalRequested:
		c.PendingApprovals = append(c.PendingApprovals, PendingApproval{ID: e.ApprovalID, RunID: e.RunID, CallID: e.CallID,
			Tool: e.Tool, Arguments: e.Arguments, Reason: e.Reason, ExpiresAt: e.ExpiresAt})
		if err := tx.Bucket([]byte(bucketApprovals)).Put([]byte(e.ApprovalID), []byte(id)); err != nil {
			return err
		}
	case *events.ApprovalDecided:
		c.PendingApprovals = slices.DeleteFunc(c.PendingApprovals, func(a PendingApproval) bool { return a.ID == e.ApprovalID })
		if len(c.PendingApprovals) == 0 {
			c.PendingApprovals = nil
		}
	case *events.ConversationClosed:
		t := env.Time
		c.Closed, c.CloseReason = &t, e.Reason
	}
	c.Updated, c.LastSeq = env.Time, env.Seq
	c.Status = statusOf(c)
	if err := putConversation(tx, c); err != nil {
		return err
	}
	if err := tx.putKey(index, append(timeKey(c.Updated), id...), nil); err != nil {
		return err
	}
	if c.RootID != "" && c.RootID != id {
		return surfaceOnRoot(tx, c, e)
	}
	return nil
}

func statusOf(c Conversation) string {
	switch {
	case c.Parked != nil:
		return ConversationParked
	case c.Closed != nil:
		return ConversationClosed
	case len(c.PendingApprovals) > 0:
		return ConversationAwaitingApproval
	case c.PendingQuestion != nil:
		return ConversationAwaitingAnswer
	case len(c.ActiveRuns) > 0:
		return ConversationRunning
	case c.Ended != nil && c.Ended.Status == events.RunFailed:
		return ConversationFailed
	case c.Ended != nil && c.Ended.Status == events.RunStopped:
		return ConversationStopped
	case c.Ended != nil, c.Halted != "":
		return ConversationHalted
	default:
		return ConversationIdle
	}
}

// park marks the conversation parked at its first undecodable event; the
// events after it still apply (they may be read, and show).
func (Conversations) park(tx *Tx, id string, ev ParkedEvent) error {
	convs := tx.Bucket([]byte(bucketConversations))
	c := Conversation{ID: id}
	found, err := tx.getJSON(convs, []byte(id), &c)
	if err != nil {
		return err
	}
	if c.Parked == nil {
		c.Parked = &ev
	}
	c.Status = statusOf(c)
	if err := putConversation(tx, c); err != nil {
		return err
	}
	if !found { // listed like any other conversation
		return tx.putKey(tx.Bucket([]byte(bucketConvByUpdated)), append(timeKey(c.Updated), id...), nil)
	}
	return nil
}

// surfaceOnRoot mirrors a delegated child's approvals on its root
// conversation, which is where the owner looks: listed there while pending,
// so the root shows awaiting_approval. The root's own time and sequence do
// not change (nothing was appended to it).
func surfaceOnRoot(tx *Tx, child Conversation, e events.Event) error {
	convs := tx.Bucket([]byte(bucketConversations))
	switch e.(type) {
	case *events.ApprovalRequested, *events.ApprovalDecided, *events.RunFinished:
	default:
		return nil
	}
	var root Conversation
	found, err := tx.getJSON(convs, []byte(child.RootID), &root)
	if err != nil || !found {
		return err
	}
	switch e := e.(type) {
	case *events.ApprovalRequested:
		a := child.PendingApprovals[len(child.PendingApprovals)-1]
		a.Conversation, a.Agent = child.ID, child.Agent
		root.PendingApprovals = append(root.PendingApprovals, a)
	case *events.ApprovalDecided:
		root.PendingApprovals = slices.DeleteFunc(root.PendingApprovals, func(a PendingApproval) bool { return a.ID == e.ApprovalID })
	case *events.RunFinished:
		root.PendingApprovals = slices.DeleteFunc(root.PendingApprovals, func(a PendingApproval) bool {
			return a.Conversation == child.ID && a.RunID == e.RunID
		})
	}
	if len(root.PendingApprovals) == 0 {
		root.PendingApprovals = nil
	}
	root.Status = statusOf(root)
	return putConversation(tx, root)
}

// putConversation stores c and keeps bucketConvOpen in step with it.
func putConversation(tx *Tx, c Conversation) error {
	if err := tx.putJSON(tx.Bucket([]byte(bucketConversations)), []byte(c.ID), c); err != nil {
		return err
	}
	open := tx.Bucket([]byte(bucketConvOpen))
	if recoverable(c) {
		return tx.putKey(open, []byte(c.ID), nil)
	}
	return tx.deleteKey(open, []byte(c.ID))
}

// recoverable: running, awaiting approval or an answer, or with queued
// messages.
func recoverable(c Conversation) bool {
	return c.Status == ConversationRunning || c.Status == ConversationAwaitingApproval || c.Status == ConversationAwaitingAnswer || c.Queued > 0
}

// GetConversation returns conversation id, or ErrNotFound.
func GetConversation(db *bbolt.DB, id string) (Conversation, error) {
	return get[Conversation](db, bucketConversations, "conversation", id)
}

// ListConversations returns up to limit conversations (all when limit ≤ 0),
// most recently updated first.
func ListConversations(db *bbolt.DB, limit int) ([]Conversation, error) {
	var out []Conversation
	err := db.View(func(tx *bbolt.Tx) error {
		convs, index := tx.Bucket([]byte(bucketConversations)), tx.Bucket([]byte(bucketConvByUpdated))
		if index == nil {
			return nil
		}
		cur := index.Cursor()
		for k, _ := cur.Last(); k != nil && (limit <= 0 || len(out) < limit); k, _ = cur.Prev() {
			id := bytes.Clone(k[8:])
			var c Conversation
			found, err := getJSON(convs, id, &c)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("index names missing conversation %q", id)
			}
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

// LeftTasks lists the conversations with a background task whose start
// has no end, by id: after a crash, the tasks its server left (R-TEAM §8).
// It reads their index: O(tasks not ended).
func LeftTasks(db *bbolt.DB) ([]string, error) {
	var ids []string
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketTasksRunning))
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, conv []byte) error {
			if !slices.Contains(ids, string(conv)) {
				ids = append(ids, string(conv))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("conversations with background tasks not ended: %w", err)
	}
	slices.Sort(ids)
	return ids, nil
}

// Recoverable lists the conversations that may have work after a restart:
// running, awaiting approval or with queued messages, by id. It reads their
// index: O(open work), not O(conversations).
func Recoverable(db *bbolt.DB) ([]string, error) {
	var ids []string
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketConvOpen))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			ids = append(ids, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("recoverable conversations: %w", err)
	}
	return ids, nil // bbolt keys are sorted
}
