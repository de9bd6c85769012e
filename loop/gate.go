package loop

import (
	"encoding/json"
	"slices"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

// Verdict is the gate's answer for one tool call.
type Verdict int

const (
	Run      Verdict = iota // run it now
	Ask                     // create an approval and pause the turn
	AskOwner                // the call is a question: record it and pause the turn
)

// Gate decides one call, in the seed's fixed order (000 §5, R-GATE-4),
// enforced here and nowhere else. The pipeline (call.go) asks it once per
// new call, after the call was vetted: a call refused anyway never asks.
//
//  1. ask_user always asks: the call is the question, and the turn pauses
//     until it is answered or expires (its traits say so; it needs no
//     approval of its own);
//  2. a call with an ask reason asks, even in an autonomous conversation;
//  3. a routine call (allow_when) runs, even in a supervised one;
//  4. the rest: tools that need no approval run; the others run when the
//     conversation is autonomous or the tool is in its auto_approve; else ask.
func Gate(tool tools.Tool, env tools.Env, args json.RawMessage, autonomous bool, autoApprove []string) (Verdict, string) {
	if traitsOf(tool).asks {
		return AskOwner, ""
	}
	if reason := tools.AskReason(tool, env, args); reason != "" {
		return Ask, reason
	}
	if tools.Routine(tool, env, args) || !tools.NeedsApproval(tool) {
		return Run, ""
	}
	if autonomous || slices.Contains(autoApprove, tool.Def().Name) {
		return Run, ""
	}
	return Ask, ""
}

// OwnerAsks is the fold of what the open run asked the owner: Approvals of
// gated calls and Questions (ask_user) by call id; AutoApprove the tools
// approved with "always" in this conversation; Decided and Asked remember
// every answered approval and settled question of the conversation (id →
// decision, outcome), so a late second answer is a conflict, not
// "unknown".
type OwnerAsks struct {
	Approvals   map[string]*Approval `json:"approvals,omitempty"`
	AutoApprove []string             `json:"auto_approve,omitempty"`
	Decided     map[string]string    `json:"decided,omitempty"`
	Questions   map[string]*Question `json:"questions,omitempty"`
	Asked       map[string]string    `json:"asked,omitempty"`
}

func (f *OwnerAsks) apply(env events.Envelope, on foldOn) {
	switch e := decoded(env).(type) {
	case *events.RunStarted:
		f.Approvals, f.Questions = nil, nil
	case *events.RunFinished:
		if on.end != nil {
			f.Approvals, f.Questions = nil, nil
		}
	case *events.ToolCompleted:
		delete(f.Approvals, e.CallID)
		delete(f.Questions, e.CallID)
	case *events.ApprovalRequested:
		if f.Approvals == nil {
			f.Approvals = map[string]*Approval{}
		}
		f.Approvals[e.CallID] = &Approval{ID: e.ApprovalID, RunID: e.RunID, Step: e.Step, CallID: e.CallID, Tool: e.Tool, Reason: e.Reason, ExpiresAt: e.ExpiresAt}
	case *events.ApprovalDecided:
		if f.Decided == nil {
			f.Decided = map[string]string{}
		}
		f.Decided[e.ApprovalID] = e.Decision
		for _, a := range f.Approvals {
			if a.ID == e.ApprovalID && a.Decision == "" {
				a.Decision, a.Always = e.Decision, e.Always
				if e.Always && e.Decision == events.DecisionApproved && !slices.Contains(f.AutoApprove, a.Tool) {
					f.AutoApprove = append(f.AutoApprove, a.Tool)
				}
			}
		}
	case *events.QuestionAsked:
		if f.Questions == nil {
			f.Questions = map[string]*Question{}
		}
		f.Questions[e.CallID] = &Question{ID: e.QuestionID, RunID: e.RunID, Step: e.Step, CallID: e.CallID, Text: e.Question,
			Choices: e.Choices, ExpiresAt: e.ExpiresAt}
	case *events.QuestionAnswered:
		f.settle(e.QuestionID, QuestionAnswered, e.Answer, e.Channel)
	case *events.QuestionExpired:
		if e.Withdrawn {
			f.settle(e.QuestionID, QuestionWithdrawn, "", "")
			break
		}
		f.settle(e.QuestionID, QuestionExpired, "", "")
	}
}

// settle records a question's outcome; the first one stored wins.
func (f *OwnerAsks) settle(id, outcome, answer, channel string) {
	if _, done := f.Asked[id]; done {
		return
	}
	if f.Asked == nil {
		f.Asked = map[string]string{}
	}
	f.Asked[id] = outcome
	for _, q := range f.Questions {
		if q.ID == id && q.Outcome == "" {
			q.Outcome, q.Answer, q.Channel = outcome, answer, channel
		}
	}
}

// PendingApproval returns the undecided approval of the open run, if any.
func (f *OwnerAsks) PendingApproval() *Approval {
	for _, a := range f.Approvals {
		if a.Decision == "" {
			return a
		}
	}
	return nil
}

// PendingQuestion returns the unanswered question of the open run, if any.
func (f *OwnerAsks) PendingQuestion() *Question {
	for _, q := range f.Questions {
		if q.Outcome == "" {
			return q
		}
	}
	return nil
}

// QuestionByID finds a question of the open run.
func (f *OwnerAsks) QuestionByID(id string) *Question {
	for _, q := range f.Questions {
		if q.ID == id {
			return q
		}
	}
	return nil
}

// ApprovalByID finds an approval of the open run.
func (f *OwnerAsks) ApprovalByID(id string) *Approval {
	for _, a := range f.Approvals {
		if a.ID == id {
			return a
		}
	}
	return nil
}
