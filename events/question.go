package events

import "time"

// Question events (ask_user, seed 000 §2.4): the run pauses on a question
// to the owner as it pauses on an approval, and carries on with the answer,
// or with word that nobody answered in time, as the call's result. All
// three are stored on the asking conversation.
const (
	TypeQuestionAsked    = "question_asked"
	TypeQuestionAnswered = "question_answered"
	TypeQuestionExpired  = "question_expired"
)

func init() {
	register[QuestionAsked]()
	register[QuestionAnswered]()
	register[QuestionExpired]()
}

// QuestionAsked pauses a run on an ask_user call until the owner answers
// or ExpiresAt passes (the conversation's approval TTL).
type QuestionAsked struct {
	QuestionID string `json:"question_id"`
	RunID      string `json:"run_id"`
	Step       int    `json:"step"`
	CallID     string `json:"call_id"`
	Question   string `json:"question"`
	// Choices are answers the model suggests, shown as buttons; the owner
	// may answer in words of their own all the same.
	Choices   []string  `json:"choices,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (*QuestionAsked) EventType() string { return TypeQuestionAsked }
func (*QuestionAsked) EventVersion() int { return 1 }

// QuestionAnswered is the owner's answer, from any channel; the first
// one stored wins.
type QuestionAnswered struct {
	QuestionID string `json:"question_id"`
	Answer     string `json:"answer"`
	Channel    string `json:"channel,omitempty"`
}

func (*QuestionAnswered) EventType() string { return TypeQuestionAnswered }
func (*QuestionAnswered) EventVersion() int { return 1 }

// QuestionExpired: nobody answered before the question's time was up (the
// sweep, or an answer that came too late). Not a refusal: the model is told
// and decides.
type QuestionExpired struct {
	QuestionID string `json:"question_id"`
	// Withdrawn: the run was stopped while the question waited; nobody is
	// asked any more (the cards say "withdrawn — run stopped").
	Withdrawn bool `json:"withdrawn,omitempty"`
}

func (*QuestionExpired) EventType() string { return TypeQuestionExpired }
func (*QuestionExpired) EventVersion() int { return 1 }
