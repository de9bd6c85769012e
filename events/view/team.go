package view

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Team is a team as the pages and the API show it: the roster with
// WORK/IDLE, the board, the mail timeline and the protocol requests still
// pending.
type Team struct {
	Team     string        `json:"team"`
	Plan     string        `json:"plan,omitempty"`
	Members  []TeamMember  `json:"members"`
	Tasks    []TeamTask    `json:"tasks"`
	Mail     []TeamMail    `json:"mail"`
	Requests []TeamRequest `json:"pending_requests"`
}

// Member states as the roster shows them.
const (
	StateWork    = "WORK"
	StateIdle    = "IDLE"
	StateStopped = "STOPPED"
)

// TeamMember is a member as the roster and the team page show it.
type TeamMember struct {
	Name           string `json:"name"`
	Agent          string `json:"agent"`
	Responsibility string `json:"responsibility,omitempty"`
	Conversation   string `json:"conversation"`
	State          string `json:"state"` // WORK, IDLE, STOPPED
	Task           string `json:"task,omitempty"`
	Plan           string `json:"plan"`
}

// TeamTask is one task of the board.
type TeamTask struct {
	ID          string   `json:"id"`
	Subject     string   `json:"subject"`
	Description string   `json:"description,omitempty"`
	Status      string   `json:"status"`
	Owner       string   `json:"owner,omitempty"`
	BlockedBy   []string `json:"blocked_by,omitempty"`
	OpenBlocks  []string `json:"open_blockers,omitempty"`
	Worktree    string   `json:"worktree,omitempty"`
	Branch      string   `json:"branch,omitempty"`
	Result      string   `json:"result,omitempty"`
}

// TeamMail is one mail of the timeline, oldest first.
type TeamMail struct {
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Type      string    `json:"type"`
	Content   string    `json:"content"`
	RequestID string    `json:"request_id,omitempty"`
	Status    string    `json:"status,omitempty"`
	TaskID    string    `json:"task_id,omitempty"`
}

// TeamRequest is a pending protocol request.
type TeamRequest struct {
	ID      string `json:"request_id"`
	Type    string `json:"type"`
	From    string `json:"from"`
	To      string `json:"to"`
	Content string `json:"content,omitempty"`
	TaskID  string `json:"task_id,omitempty"`
}

// StoppedTurn is one conversation of a team that the owner's stop of the
// team stopped: its run, and the waiting messages it dropped.
type StoppedTurn struct {
	Conversation string `json:"conversation_id"`
	Member       string `json:"member"` // Lead for the lead's
	Stopped
}

// MemberConversation is member name's conversation in team: derived from
// both, so a spawn resumed after a crash finds it.
func MemberConversation(team, name string) string {
	if len(team) > 92 {
		team = team[:92]
	}
	return team + "-t-" + name
}

// ChildID is the conversation a delegate call opens. It is derived from the
// parent conversation and the call id, so a call resumed after a restart
// finds the child it opened.
func ChildID(parent, callID string) string {
	sum := sha256.Sum256([]byte(parent + "\x00" + callID))
	if len(parent) > 80 {
		parent = parent[:80]
	}
	return parent + "-d-" + hex.EncodeToString(sum[:8])
}

// The names of the tools whose calls the chat shows as cards of their own
// (loop.AskUserTool, loop.DelegateTool).
const (
	AskUserTool  = "ask_user"
	DelegateTool = "delegate"
)
