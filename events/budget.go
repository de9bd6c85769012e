package events

// Budget events (R-X-5): before a model call leaves, its worst-case cost is
// reserved against every budget it falls under; when it returns, the
// reservation is settled to what it cost. Both are stored on one scope,
// BudgetScope, so one writer decides on all budgets and a restart folds
// them back: nothing forgotten, nothing counted twice.
const (
	TypeBudgetReserved = "budget_reserved"
	TypeBudgetSettled  = "budget_settled"
)

func init() {
	register[BudgetReserved]()
	register[BudgetSettled]()
}

// BudgetScope is the scope of every reservation and settlement.
var BudgetScope = Scope(Root + ".budget.ledger")

// BudgetReserved holds the worst-case cost of one model call before it
// leaves: the input estimate at the route's price plus its max output, or
// budget.unknown_call_usd when the price is unknown (Ceiling).
type BudgetReserved struct {
	ReservationID string `json:"reservation_id"`
	Day           string `json:"day"` // YYYY-MM-DD in the owner's timezone
	Agent         string `json:"agent,omitempty"`
	Conversation  string `json:"conversation,omitempty"`
	// Ancestors are the conversations that delegated Conversation, nearest
	// first: the call counts against each of their caps too.
	Ancestors []string `json:"ancestors,omitempty"`
	RunID     string   `json:"run_id,omitempty"`
	Step      int      `json:"step,omitempty"`
	Purpose   string   `json:"purpose"`
	Route     string   `json:"route"`
	USD       float64  `json:"usd"`
	Ceiling   bool     `json:"ceiling,omitempty"`
	// ConversationCapUSD is the conversation's cost cap when the call was
	// reserved (0: none), so a child's call can be checked against it.
	ConversationCapUSD float64 `json:"conversation_cap_usd,omitempty"`
	// Holder is the crew process that reserved it when several share one
	// cluster (R-ES-8): a peer settles it only once that process is dead.
	Holder string `json:"holder,omitempty"`
	// Settles are settlements of earlier calls stored with this
	// reservation: a reply that asked for tools is followed by the next
	// call of its turn, so its settlement waits for that call's
	// reservation and both take one stored message (one fsync per
	// decision, issue 30 item 3). Each counts as a budget_settled.
	Settles []BudgetSettled `json:"settles,omitempty"`
}

func (*BudgetReserved) EventType() string { return TypeBudgetReserved }
func (*BudgetReserved) EventVersion() int { return 1 }

// BudgetSettled replaces a reservation by what the call cost. Unknown: the
// call answered without a cost, so the reservation stands at its worst
// case. Interrupted: the process died with the call in flight and the
// restart settled it (at the recorded call's cost, or the worst case when
// none was recorded).
type BudgetSettled struct {
	ReservationID string  `json:"reservation_id"`
	USD           float64 `json:"usd"`
	Unknown       bool    `json:"unknown,omitempty"`
	Interrupted   bool    `json:"interrupted,omitempty"`
}

func (*BudgetSettled) EventType() string { return TypeBudgetSettled }
func (*BudgetSettled) EventVersion() int { return 1 }

// runOf: the run whose call was reserved (the event lives on the budget
// scope, not in the run's conversation).
func (e *BudgetReserved) runOf() string { return e.RunID }
