// Package budget reserves a model call's worst-case cost before it leaves
// and settles it to the real cost when it returns (R-X-5, R-LOOP-5).
//
// A call falls under up to four budgets: its conversation's cost cap
// (cost_cap_usd, also the turn's), the cap of every conversation that
// delegated it (a child's spend counts into its parent), its agent's
// daily cap (daily_cap_usd in agent.yaml) and the crew's daily budget
// (budget.daily_usd in config.yaml); days are the owner's. The worst case
// is the input estimate at the route's price plus max_output_tokens at
// the output price (models.<route> in config.yaml over the known table),
// or budget.unknown_call_usd when the price is unknown. A call that would
// take any budget past its cap is refused with a Refusal naming the budget
// in plain words; nothing leaves.
//
// Reservations and settlements are events on one scope
// (events.BudgetScope), appended with the scope's last sequence as
// expectation, so two writers never both take the last cents, and Open
// folds them back after a restart. A reservation a dead process left open
// is settled by Open: at the cost of the model call recorded for it, or at
// its worst case when none was (the call may have gone out).
//
// Every model call goes through Ledger.Models, which wraps the models of
// turns, escalation, summaries, consolidation, compaction and scripts
// alike; the Request says whom it is for (Payer) and why (Purpose).
package budget

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
)

// DefaultUnknownCallUSD is budget.unknown_call_usd's default: what a call
// of unknown price reserves.
const DefaultUnknownCallUSD = 0.05

// Store is the part of events.Log the ledger reads and writes.
type Store interface {
	Read(ctx context.Context, filter string, from uint64) iter.Seq2[events.Envelope, error]
	Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error)
	Sync(ctx context.Context) error
}

var _ Store = (*events.Log)(nil)

// Config wires a Ledger.
type Config struct {
	Log      Store
	Location *time.Location // the owner's days
	Clock    func() time.Time
	NewID    func() string
	Logger   *slog.Logger
	// Catalog gives each route's price and max output tokens.
	Catalog *llm.Catalog
	// Caps are read at each reservation (a reload changes them): the
	// crew's budget.daily_usd and budget.unknown_call_usd, and an agent's
	// daily_cap_usd. Nil or 0: no cap, DefaultUnknownCallUSD.
	Caps func() Caps
	// Holder names this crew process on a shared cluster; each reservation
	// carries it. Alive says whether a holder is still running: Open and
	// SettleDead settle only the reservations of dead holders (or of none),
	// never those a live peer still has in flight. Empty and nil: one
	// process, so every open reservation at Open is a dead one's.
	Holder string
	Alive  func(ctx context.Context, holder string) (bool, error)
	// ConvsInMemory bounds the conversations whose spend is kept in
	// memory (0: 10,000); one let go is read from the log when it
	// reserves again.
	ConvsInMemory int
}

// Caps are the budgets in force (R-X-5): config.yaml's budget: block is
// this type (cmd/crew/home decodes it), and each agent's daily cap comes
// from its agent.yaml.
type Caps struct {
	// DailyUSD caps the whole crew's model spend per day (the owner's);
	// 0: no cap.
	DailyUSD float64 `yaml:"daily_usd"`
	// UnknownCallUSD is what a call of unknown price reserves; 0:
	// DefaultUnknownCallUSD.
	UnknownCallUSD float64            `yaml:"unknown_call_usd"`
	AgentDailyUSD  map[string]float64 `yaml:"-"` // by agent id; none: no cap of its own
}

func (l *Ledger) capsNow() Caps {
	var c Caps
	if l.cfg.Caps != nil {
		c = l.cfg.Caps()
	}
	if c.UnknownCallUSD <= 0 {
		c.UnknownCallUSD = DefaultUnknownCallUSD
	}
	return c
}

// ErrBudget matches every Refusal.
var ErrBudget = llm.ErrBudget

// Refusal is a call refused before it left: Sentence names the budget.
type Refusal struct {
	Budget   string // conversation, parent, agent_day, global_day
	Sentence string // "health-coach's daily cap of $0.50 is reached."
}

func (r *Refusal) Error() string        { return r.Sentence }
func (r *Refusal) Is(target error) bool { return target == ErrBudget }

// StoreError is a reservation the ledger could not decide on or store:
// reading its events, the append or its fsync failed (a stream without a
// leader for a moment). It is the harness failing, never the call, and
// nothing left: the caller fails its own work as for any other store
// error (the loop's pass is run again). A *Refusal is never one.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// Ledger holds the fold of the budget events and decides on reservations.
type Ledger struct {
	cfg Config
	mu  sync.Mutex
	// last is the scope's last stored sequence: the expectation of the
	// next append.
	last      uint64
	open      map[string]events.BudgetReserved
	convs     *convSpend            // conversation (and its descendants) → settled + open, its cap as last reserved; bounded
	agentDay  map[[2]string]float64 // {agent, day} → settled + open; the last daysKept days
	globalDay map[string]float64
	// dayFloor is the oldest day the day sums keep ("": none let go
	// yet); a day before it is decided on by no cap again.
	dayFloor string
	// pending are settlements applied here and not stored yet: the next
	// reservation carries them (BudgetReserved.Settles), or flush stores
	// them within flushAfter.
	pending []events.BudgetSettled
	// unsure are reservations whose append failed without a conflict:
	// the store may have taken one and lost its answer. The next refold
	// (a conflict is bound to follow if it did) settles each it finds
	// open at zero, since its call never left.
	unsure  []string
	flusher *time.Timer
	closed  bool
}

// flushAfter bounds how long a settlement waits for the next reservation
// to carry it (a turn paused on an approval makes no next call soon).
const flushAfter = 2 * time.Second

// Open folds the budget events and settles what a dead process left open.
func Open(ctx context.Context, cfg Config) (*Ledger, error) {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Ledger{cfg: cfg}
	if err := l.refold(ctx); err != nil {
		return nil, err
	}
	if err := l.recover(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// refold rebuilds the state from the log.
func (l *Ledger) refold(ctx context.Context) error {
	l.last = 0
	l.open = map[string]events.BudgetReserved{}
	l.convs, l.agentDay, l.globalDay = newConvSpend(cmp.Or(l.cfg.ConvsInMemory, convsInMemory)), map[[2]string]float64{}, map[string]float64{}
	l.dayFloor = ""
	for env, err := range l.cfg.Log.Read(ctx, events.BudgetScope.Filter(), 1) {
		if err != nil {
			return fmt.Errorf("budget: %w", err)
		}
		e, err := env.Decode()
		if err != nil {
			return fmt.Errorf("budget: %s seq %d: %w", env.Subject, env.Seq, err)
		}
		l.apply(e)
		l.last = env.Seq
	}
	// What this process settled and has not stored yet still holds,
	// unless the log settled it meanwhile (a restart took it for dead).
	kept := l.pending[:0]
	for _, s := range l.pending {
		if _, ok := l.open[s.ReservationID]; ok {
			l.apply(&s)
			kept = append(kept, s)
		}
	}
	l.pending = kept
	for _, id := range l.unsure {
		if _, ok := l.open[id]; ok {
			s := events.BudgetSettled{ReservationID: id}
			l.apply(&s)
			l.pending = append(l.pending, s)
			l.armLocked()
		}
	}
	l.unsure = nil
	return nil
}

func (l *Ledger) apply(e events.Event) {
	switch e := e.(type) {
	case *events.BudgetReserved:
		for i := range e.Settles {
			l.apply(&e.Settles[i])
		}
		if _, dup := l.open[e.ReservationID]; dup {
			return
		}
		l.open[e.ReservationID] = *e
		l.add(*e, e.USD)
		if e.Conversation != "" && e.ConversationCapUSD > 0 {
			l.convs.entry(e.Conversation, l.pinned).capUSD = e.ConversationCapUSD
		}
	case *events.BudgetSettled:
		r, ok := l.open[e.ReservationID]
		if !ok {
			return // settled twice or never reserved: counted once
		}
		delete(l.open, e.ReservationID)
		l.add(r, e.USD-r.USD)
	}
}

func (l *Ledger) add(r events.BudgetReserved, usd float64) {
	for _, c := range l.convsOf(r.Conversation, r.Ancestors) {
		l.convs.entry(c, l.pinned).usd += usd
	}
	if _, ok := l.globalDay[r.Day]; !ok && r.Day >= l.dayFloor {
		l.keepDays(r.Day)
	}
	if r.Day < l.dayFloor {
		return // a day let go: its late settlement changes no cap's decision
	}
	if r.Agent != "" {
		l.agentDay[[2]string{r.Agent, r.Day}] += usd
	}
	l.globalDay[r.Day] += usd
}

// daysKept is how many days the day sums keep: the caps decide on the
// owner's current day, and a week covers a reservation made before
// midnight and settled after, a change of timezone and a clock set back.
const daysKept = 7

// keepDays adds day to the day sums and lets go of the oldest days past
// daysKept, so the sums stay bounded however long the process runs.
func (l *Ledger) keepDays(day string) {
	l.globalDay[day] = 0
	if len(l.globalDay) <= daysKept {
		return
	}
	days := slices.Sorted(maps.Keys(l.globalDay))
	l.dayFloor = days[len(days)-daysKept]
	for _, d := range days[:len(days)-daysKept] {
		delete(l.globalDay, d)
	}
	for k := range l.agentDay {
		if k[1] < l.dayFloor {
			delete(l.agentDay, k)
		}
	}
}

func (l *Ledger) convsOf(conv string, ancestors []string) []string {
	if conv == "" {
		return nil
	}
	return append([]string{conv}, ancestors...)
}

// Reservation is a reserved call, settled by Settle.
type Reservation struct {
	events.BudgetReserved
}

// Reserve reserves the worst case of req on req.Route (its Estimate, else
// the estimate of its messages and tools) for req.Payer, or refuses it
// with a *Refusal (ErrBudget). The reservation is stored before Reserve
// returns.
func (l *Ledger) Reserve(ctx context.Context, req llm.Request) (*Reservation, error) {
	tokens := req.Estimate
	if tokens <= 0 {
		tokens = llm.EstimateTokens(req.Messages, req.Tools)
	}
	c, route := req.Payer, req.Route
	caps := l.capsNow()
	usd, ceiling := l.worstCase(route, tokens, caps.UnknownCallUSD)
	return l.reserveUSD(ctx, c, req.Purpose, route, usd, ceiling, caps)
}

// reserveUSD stores a reservation of usd for c's call with purpose on
// route (ceiling: the unknown-price amount), or refuses it.
func (l *Ledger) reserveUSD(ctx context.Context, c llm.Payer, purpose, route string, usd float64, ceiling bool, caps Caps) (*Reservation, error) {
	r := events.BudgetReserved{
		ReservationID: l.cfg.NewID(), Day: l.cfg.Clock().In(l.cfg.Location).Format(time.DateOnly),
		Agent: c.Agent, Conversation: c.Conversation, Ancestors: c.Ancestors, RunID: c.RunID, Step: c.Step,
		Purpose: cmp.Or(purpose, events.PurposeTurn), Route: route, USD: usd, Ceiling: ceiling, ConversationCapUSD: c.CapUSD,
		Holder: l.cfg.Holder,
	}
	if c.Conversation == "" {
		r.Ancestors = nil
	}
	res, err := l.reserveLocked(ctx, r, caps)
	if _, refused := errors.AsType[*Refusal](err); refused {
		return nil, err
	} else if err != nil {
		return nil, &StoreError{Err: err}
	}
	// Stored under the lock, fsynced outside it (ADR 0008): the
	// reservations of conversations calling at the same moment share one
	// fsync instead of queueing behind each other's. The call leaves only
	// once its reservation is durable.
	if err := l.cfg.Log.Sync(ctx); err != nil {
		zero := 0.0
		l.SettleLater(res, &zero, err)
		return nil, &StoreError{Err: fmt.Errorf("budget: reserve: %w", err)}
	}
	return res, nil
}

// reserveLocked decides on r and stores it, not fsynced yet.
func (l *Ledger) reserveLocked(ctx context.Context, r events.BudgetReserved, caps Caps) (*Reservation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for attempt := 0; ; attempt++ {
		refusal, err := l.check(ctx, r, caps)
		if err != nil {
			return nil, err
		}
		if refusal != nil {
			return nil, refusal
		}
		r.Settles = l.unstored()
		if err := l.append(events.Deferred(ctx), &r); err == nil {
			l.pending = nil
			res := &Reservation{r}
			res.Settles = nil
			return res, nil
		} else if !errors.Is(err, events.ErrConflict) || attempt >= 10 {
			if !errors.Is(err, events.ErrConflict) {
				l.unsure = append(l.unsure, r.ReservationID)
			}
			return nil, fmt.Errorf("budget: reserve: %w", err)
		}
		// Another writer reserved meanwhile: decide again on its events.
		if err := l.refold(ctx); err != nil {
			return nil, err
		}
	}
}

// storedOpen: the log holds id open — open here, or settled here and not
// stored yet.
func (l *Ledger) storedOpen(id string) bool {
	if _, ok := l.open[id]; ok {
		return true
	}
	return slices.ContainsFunc(l.pending, func(s events.BudgetSettled) bool { return s.ReservationID == id })
}

// unstored are the pending settlements whose reservation is still open in
// the log's fold — all of them: each was applied here already, so the
// stored reservation repeats them for the fold of every other reader.
func (l *Ledger) unstored() []events.BudgetSettled {
	if len(l.pending) == 0 {
		return nil
	}
	return slices.Clone(l.pending)
}

// append stores e after the last event this ledger saw and applies it.
func (l *Ledger) append(ctx context.Context, e events.Event) error {
	env, err := events.New(e)
	if err != nil {
		return err
	}
	stored, err := l.cfg.Log.Append(ctx, events.BudgetScope, l.last, env)
	if err != nil {
		return err
	}
	l.last = stored[len(stored)-1].Seq
	l.apply(e)
	return nil
}

// check is the first budget r would take past its cap.
func (l *Ledger) check(ctx context.Context, r events.BudgetReserved, caps Caps) (*Refusal, error) {
	over := func(used, capUSD float64) bool { return capUSD > 0 && (used >= capUSD || used+r.USD > capUSD+1e-12) }
	if r.Conversation != "" {
		capUSD := r.ConversationCapUSD
		own, err := l.spend(ctx, r.Conversation)
		if err != nil {
			return nil, err
		}
		if over(own.usd, capUSD) {
			return &Refusal{Budget: "conversation", Sentence: fmt.Sprintf("this conversation's cost cap of %s is reached (%s spent or reserved%s).",
				dollars(capUSD), dollars(own.usd), l.call(r))}, nil
		}
		for _, a := range r.Ancestors {
			anc, err := l.spend(ctx, a)
			if err != nil {
				return nil, err
			}
			if over(anc.usd, anc.capUSD) {
				return &Refusal{Budget: "parent", Sentence: fmt.Sprintf("the delegating conversation %s's cost cap of %s is reached (%s spent or reserved%s).",
					a, dollars(anc.capUSD), dollars(anc.usd), l.call(r))}, nil
			}
		}
	}
	if r.Agent != "" {
		capUSD, used := caps.AgentDailyUSD[r.Agent], l.agentDay[[2]string{r.Agent, r.Day}]
		if over(used, capUSD) {
			return &Refusal{Budget: "agent_day", Sentence: fmt.Sprintf("%s's daily cap of %s is reached (%s spent or reserved on %s%s).",
				r.Agent, dollars(capUSD), dollars(used), r.Day, l.call(r))}, nil
		}
	}
	if used := l.globalDay[r.Day]; over(used, caps.DailyUSD) {
		return &Refusal{Budget: "global_day", Sentence: fmt.Sprintf("the crew's daily budget of %s (budget.daily_usd) is reached (%s spent or reserved on %s%s).",
			dollars(caps.DailyUSD), dollars(used), r.Day, l.call(r))}, nil
	}
	return nil, nil
}

func (l *Ledger) call(r events.BudgetReserved) string {
	if r.USD <= 0 {
		return ""
	}
	if r.Ceiling {
		return fmt.Sprintf("; a call of unknown price reserves %s", dollars(r.USD))
	}
	return fmt.Sprintf("; this call may cost up to %s", dollars(r.USD))
}

// Settle replaces the reservation by the call's cost (nil: unknown, the
// worst case stands; a failed call that reported nothing cost nothing).
func (l *Ledger) Settle(ctx context.Context, r *Reservation, cost *float64, callErr error) error {
	return l.settle(ctx, settlement(r, cost, callErr))
}

// SettleLater settles r at once in what this ledger decides on, and
// stores the settlement with the next reservation (or within flushAfter):
// for a reply whose turn goes on to another call. A crash before it is
// stored leaves r open in the log, and the next start settles it at the
// cost its model_called recorded — the same amount, once.
func (l *Ledger) SettleLater(r *Reservation, cost *float64, callErr error) {
	s := settlement(r, cost, callErr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.open[s.ReservationID]; !ok {
		return
	}
	l.apply(s)
	l.pending = append(l.pending, *s)
	l.armLocked()
}

// armLocked starts the flusher unless it runs (l.mu held). A flush that
// fails starts it again: the settlements stay pending, stored by the next
// reservation or the next flush, and a stop before either leaves their
// reservations open for the next start to settle from the recorded calls.
func (l *Ledger) armLocked() {
	if l.flusher != nil || l.closed {
		return
	}
	l.flusher = time.AfterFunc(flushAfter, func() {
		if err := l.Flush(context.Background()); err != nil {
			l.cfg.Logger.Warn("budget: storing settlements failed; trying again", "in", flushAfter, "err", err)
			l.mu.Lock()
			l.armLocked()
			l.mu.Unlock()
		}
	})
}

// settleOrLater settles r, or, when the settlement cannot be stored now,
// settles it here and stores it later (SettleLater): a failed append
// neither fails the call nor leaves the reservation at its worst case.
func (l *Ledger) settleOrLater(ctx context.Context, r *Reservation, cost *float64, callErr error) {
	if err := l.Settle(ctx, r, cost, callErr); err != nil {
		l.cfg.Logger.Warn("budget: storing a settlement failed; it is stored with the next reservation", "reservation", r.ReservationID, "err", err)
		l.SettleLater(r, cost, callErr)
	}
}

// Flush stores the settlements no reservation has carried yet. Close
// flushes too.
func (l *Ledger) Flush(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.flusher != nil {
		l.flusher.Stop()
		l.flusher = nil
	}
	for len(l.pending) > 0 {
		s := l.pending[0]
		err := l.appendSettled(ctx, &s)
		if err != nil {
			return fmt.Errorf("budget: settle %s: %w", s.ReservationID, err)
		}
		// A refold after a conflict may have dropped it (and others the
		// log had settled) already.
		l.pending = slices.DeleteFunc(l.pending, func(p events.BudgetSettled) bool { return p.ReservationID == s.ReservationID })
	}
	l.pending = nil
	return nil
}

// Close stores what is pending; the ledger settles nothing later.
func (l *Ledger) Close() error {
	err := l.Flush(context.Background())
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return err
}

// settlement is the budget_settled of r for a call that cost cost.
func settlement(r *Reservation, cost *float64, callErr error) *events.BudgetSettled {
	s := &events.BudgetSettled{ReservationID: r.ReservationID}
	switch {
	case cost != nil && !validCost(*cost):
		s.USD, s.Unknown = r.USD, true // a provider does not give money back: its worst case stands
	case cost != nil:
		s.USD = *cost
	case callErr != nil:
		s.USD = 0 // refused or failed before an answer: nothing known was spent
	default:
		s.USD, s.Unknown = r.USD, true
	}
	return s
}

// validCost is a cost a call can have: not negative, finite.
func validCost(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

func (l *Ledger) settle(ctx context.Context, s *events.BudgetSettled) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.appendSettled(ctx, s); err != nil {
		return fmt.Errorf("budget: settle %s: %w", s.ReservationID, err)
	}
	return nil
}

// appendSettled stores s unless its reservation is settled already
// (l.mu held), deciding again after another writer's append.
func (l *Ledger) appendSettled(ctx context.Context, s *events.BudgetSettled) error {
	for attempt := 0; ; attempt++ {
		if !l.storedOpen(s.ReservationID) {
			return nil // settled already (by a refold after a conflict)
		}
		err := l.append(ctx, s)
		if err == nil {
			return nil
		}
		if !errors.Is(err, events.ErrConflict) || attempt >= 10 {
			return err
		}
		if err := l.refold(ctx); err != nil {
			return err
		}
	}
}

// recover settles the reservations a dead process left open: at the cost
// of the model call its conversation recorded for the same run and step,
// or at the worst case when there is none (it may have gone out). A
// reservation of a live peer is its own to settle.
func (l *Ledger) recover(ctx context.Context) error {
	l.mu.Lock()
	open := maps.Clone(l.open)
	l.mu.Unlock()
	ids := slices.Sorted(maps.Keys(open))
	alive := map[string]bool{l.cfg.Holder: true}
	for _, id := range ids {
		r := open[id]
		if r.Holder != "" && l.cfg.Alive != nil {
			live, known := alive[r.Holder]
			if !known {
				var err error
				if live, err = l.cfg.Alive(ctx, r.Holder); err != nil {
					return fmt.Errorf("budget: is %s alive: %w", r.Holder, err)
				}
				alive[r.Holder] = live
			}
			if live {
				continue
			}
		}
		s := &events.BudgetSettled{ReservationID: id, USD: r.USD, Interrupted: true}
		if mc, err := l.recorded(ctx, r); err != nil {
			return err
		} else if mc != nil && mc.CostUSD != nil && validCost(*mc.CostUSD) {
			s.USD = *mc.CostUSD
		} else if mc != nil {
			s.Unknown = mc.Error == ""
			if mc.Error != "" {
				s.USD = 0
			}
		}
		if err := l.settle(ctx, s); err != nil {
			return err
		}
		l.cfg.Logger.Info("budget: settled a reservation left open by a stop", "reservation", id, "usd", s.USD, "conversation", r.Conversation, "holder", r.Holder)
	}
	return nil
}

// SettleDead settles what crew processes that died since left open: the
// ledger is read again first (peers append to it too). The leader of
// several processes on one cluster runs it now and then.
func (l *Ledger) SettleDead(ctx context.Context) error {
	l.mu.Lock()
	err := l.refold(ctx)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return l.recover(ctx)
}

// recorded is the model call stored for r's run and step, if any.
func (l *Ledger) recorded(ctx context.Context, r events.BudgetReserved) (*events.ModelCalled, error) {
	if r.Conversation == "" || r.RunID == "" {
		return nil, nil
	}
	var found *events.ModelCalled
	for env, err := range l.cfg.Log.Read(ctx, events.Conv(r.Conversation).Filter(), 1) {
		if err != nil {
			return nil, err
		}
		if env.Type != events.TypeModelCalled {
			continue
		}
		e, err := env.Decode()
		if err != nil {
			return nil, err
		}
		if mc := e.(*events.ModelCalled); mc.RunID == r.RunID && mc.Step == r.Step && mc.PurposeOf() == r.Purpose && mc.Route == r.Route {
			found = mc
		}
	}
	return found, nil
}

// worstCase is the most a call on route with a request of tokens (the
// messages and the declarations, which are sent with every call) can
// cost, and whether that is the unknown-price ceiling.
func (l *Ledger) worstCase(route string, tokens int, unknown float64) (float64, bool) {
	spec := l.cfg.Catalog.Lookup(route)
	if spec.Price == nil {
		return unknown, true
	}
	return spec.Price.Cost(tokens, spec.MaxOutputTokens), false
}

// Spent is what the budgets of the owner's day hold (settled plus
// reserved), with the caps in force: GET /api/budget.
type Spent struct {
	Day              string                  `json:"day"`
	DailyUSD         float64                 `json:"daily_usd"` // budget.daily_usd; 0: none
	GlobalUSD        float64                 `json:"usd"`
	Agents           map[string]float64      `json:"agents"`
	AgentCaps        map[string]float64      `json:"agent_daily_caps_usd"`
	OpenReservations []events.BudgetReserved `json:"open_reservations"`
}

// Today is the owner's current day's spend.
func (l *Ledger) Today() Spent {
	caps := l.capsNow()
	l.mu.Lock()
	defer l.mu.Unlock()
	day := l.cfg.Clock().In(l.cfg.Location).Format(time.DateOnly)
	s := Spent{Day: day, DailyUSD: caps.DailyUSD, GlobalUSD: l.globalDay[day], Agents: map[string]float64{}, AgentCaps: caps.AgentDailyUSD,
		OpenReservations: []events.BudgetReserved{}}
	if s.AgentCaps == nil {
		s.AgentCaps = map[string]float64{}
	}
	for k, v := range l.agentDay {
		if k[1] == day {
			s.Agents[k[0]] = v
		}
	}
	for _, r := range l.open {
		s.OpenReservations = append(s.OpenReservations, r)
	}
	slices.SortFunc(s.OpenReservations, func(a, b events.BudgetReserved) int { return cmp.Compare(a.ReservationID, b.ReservationID) })
	return s
}

// Open reports the reservations not settled yet.
func (l *Ledger) OpenReservations() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}

// dollars writes cents, or the fractions of a cent an amount has (up
// to four places).
func dollars(v float64) string {
	if math.Abs(v*100-math.Round(v*100)) < 1e-9 {
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}
