package team

import (
	"time"

	"github.com/my-agent-crew/crew/events"
)

// Lead is the lead's name on its team: its mailbox and the sender of what
// it sends. No member may take it.
const Lead = "lead"

// Mail is one stored message of a mailbox.
type Mail struct {
	events.MailSent
	Seq  uint64
	Time time.Time
}

// Request is a typed control request and what became of it (seed 001 §11):
// a response of another type, from someone else, or after it was answered
// changes nothing.
type Request struct {
	ID     string
	Type   string // shutdown_request, plan_request, plan_approval_request
	From   string
	To     string
	Status string // pending, approved, rejected
	// Content is the request's words (a plan); Feedback the response's.
	Content     string
	Feedback    string
	TaskID      string
	WorkVersion int
	Seq         uint64
}

// Mailboxes is the fold of a team's mailboxes (crew.mail.<team>.>).
type Mailboxes struct {
	Seq      uint64            // last applied stream sequence of any mailbox
	Last     map[string]uint64 // per mailbox: its last sequence (a send's expectation)
	Box      map[string][]Mail
	Requests map[string]*Request
	Order    []string // request ids in the order sent
	// Reported are the teammate runs an idle notification reported.
	Reported map[string]bool
}

func newMailboxes() *Mailboxes {
	return &Mailboxes{Last: map[string]uint64{}, Box: map[string][]Mail{}, Requests: map[string]*Request{}, Reported: map[string]bool{}}
}

// responds maps a response type to the request type it answers.
var responds = map[string]string{
	events.MailShutdownResponse: events.MailShutdownRequest,
	events.MailPlanResponse:     events.MailPlanApproval,
}

// Apply folds one mailbox event.
func (m *Mailboxes) Apply(env events.Envelope) error {
	if env.Seq != 0 && env.Seq <= m.Seq {
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	if ms, ok := e.(*events.MailSent); ok {
		m.Box[ms.To] = append(m.Box[ms.To], Mail{MailSent: *ms, Seq: env.Seq, Time: env.Time})
		m.Last[ms.To] = env.Seq
		switch ms.Type {
		case events.MailShutdownRequest, events.MailPlanRequest, events.MailPlanApproval:
			if ms.RequestID != "" && m.Requests[ms.RequestID] == nil {
				m.Requests[ms.RequestID] = &Request{ID: ms.RequestID, Type: ms.Type, From: ms.From, To: ms.To, Status: events.ProtocolPending,
					Content: ms.Content, TaskID: ms.TaskID, WorkVersion: ms.WorkVersion, Seq: env.Seq}
				m.Order = append(m.Order, ms.RequestID)
			}
		case events.MailShutdownResponse, events.MailPlanResponse:
			r := m.Requests[ms.RequestID]
			if r != nil && r.Type == responds[ms.Type] && r.Status == events.ProtocolPending && ms.From == r.To &&
				(ms.Status == events.ProtocolApproved || ms.Status == events.ProtocolRejected) {
				r.Status, r.Feedback = ms.Status, ms.Content
			}
		case events.MailIdle:
			if ms.Run != "" {
				m.Reported[ms.Run] = true
			}
		}
	}
	if env.Seq != 0 {
		m.Seq = env.Seq
	}
	return nil
}

// Unseen are the mails of member's mailbox after seq.
func (m *Mailboxes) Unseen(member string, seq uint64) []Mail {
	box := m.Box[member]
	for i, ml := range box {
		if ml.Seq > seq {
			return box[i:]
		}
	}
	return nil
}

// Pending is the pending request of type typ to member, if any.
func (m *Mailboxes) Pending(typ, to string) *Request {
	for _, id := range m.Order {
		if r := m.Requests[id]; r.Type == typ && r.To == to && r.Status == events.ProtocolPending {
			return r
		}
	}
	return nil
}

// Plan gate statuses (seed 001 §12).
const (
	PlanNotRequired = "not_required"
	PlanRequired    = "required"
	PlanPending     = "pending"
	PlanApproved    = "approved"
	PlanRejected    = "rejected"
)

// planStatus is the member's plan gate: required by its spawn or a
// plan_request; then its latest plan's status, an approval counting only
// for the work version it was written for.
func planStatus(b *Board, m *Mailboxes, member string) string {
	mem := b.Members[member]
	if mem == nil {
		return PlanNotRequired
	}
	required := mem.RequirePlan
	var latest *Request
	for _, id := range m.Order {
		r := m.Requests[id]
		switch {
		case r.Type == events.MailPlanRequest && r.To == member:
			required = true
		case r.Type == events.MailPlanApproval && r.From == member:
			latest = r
		}
	}
	if !required {
		return PlanNotRequired
	}
	switch {
	case latest == nil:
		return PlanRequired
	case latest.Status == events.ProtocolPending:
		if latest.WorkVersion != mem.WorkVersion {
			return PlanRequired
		}
		return PlanPending
	case latest.Status == events.ProtocolRejected:
		return PlanRejected
	case latest.WorkVersion != mem.WorkVersion:
		return PlanRequired // approved for other work: void
	}
	return PlanApproved
}
