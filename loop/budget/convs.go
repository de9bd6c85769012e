package budget

import (
	"container/list"
	"context"
	"fmt"
	"hash/fnv"

	"github.com/my-agent-crew/crew/events"
)

// convsInMemory bounds the conversations whose spend the ledger keeps in
// memory (a conversation's spend counts its descendants'); the least
// recently used one without an open reservation is let go first, and read
// again from the log when it reserves again.
const convsInMemory = 10_000

// convSpend is the per-conversation part of the fold: settled plus open
// USD and the cap last reserved with, for at most max conversations.
type convSpend struct {
	max   int
	order *list.List // of *spendEntry, most recently used first
	byID  map[string]*list.Element
	// gone remembers (with false positives, never false negatives) the
	// conversations let go: one seen again starts partial, its spend read
	// from the log before a decision, while a new one starts at zero.
	gone seenFilter
}

type spendEntry struct {
	conv   string
	usd    float64
	capUSD float64
	// partial: usd lacks what the fold applied before the entry was let
	// go; exact reads it from the log.
	partial bool
}

func newConvSpend(max int) *convSpend {
	return &convSpend{max: max, order: list.New(), byID: map[string]*list.Element{}}
}

// entry is conv's entry, made (and the oldest let go past max, but those
// in pinned) when there is none.
func (c *convSpend) entry(conv string, pinned func(string) bool) *spendEntry {
	if el, ok := c.byID[conv]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*spendEntry)
	}
	e := &spendEntry{conv: conv, partial: c.gone.has(conv)}
	c.byID[conv] = c.order.PushFront(e)
	for el := c.order.Back(); c.order.Len() > c.max && el != nil; {
		prev := el.Prev()
		if old := el.Value.(*spendEntry); old != e && !pinned(old.conv) {
			c.order.Remove(el)
			delete(c.byID, old.conv)
			c.gone.add(old.conv)
		}
		el = prev
	}
	return e
}

func (c *convSpend) len() int { return c.order.Len() }

// pinned: conv has an open reservation here (its own or a descendant's),
// whose settlement the fold will apply to its entry.
func (l *Ledger) pinned(conv string) bool {
	for _, r := range l.open {
		if r.Conversation == conv {
			return true
		}
		for _, a := range r.Ancestors {
			if a == conv {
				return true
			}
		}
	}
	return false
}

// spend is conv's exact spend and cap for a decision (l.mu held): an
// entry let go before, or made after one was, is read from the log.
func (l *Ledger) spend(ctx context.Context, conv string) (*spendEntry, error) {
	e := l.convs.entry(conv, l.pinned)
	if !e.partial {
		return e, nil
	}
	usd, capUSD, err := l.readSpend(ctx, conv)
	if err != nil {
		return nil, err
	}
	e.usd, e.capUSD, e.partial = usd, capUSD, false
	return e, nil
}

// readSpend folds conv's spend and cap from the budget log up to what this
// ledger has seen, plus the settlements it applied and has not stored.
func (l *Ledger) readSpend(ctx context.Context, conv string) (usd, capUSD float64, err error) {
	open := map[string]events.BudgetReserved{}
	touches := func(r events.BudgetReserved) bool {
		if r.Conversation == conv {
			return true
		}
		for _, a := range r.Ancestors {
			if a == conv && r.Conversation != "" {
				return true
			}
		}
		return false
	}
	settle := func(s events.BudgetSettled) {
		if r, ok := open[s.ReservationID]; ok {
			delete(open, s.ReservationID)
			usd += s.USD - r.USD
		}
	}
	for env, err := range l.cfg.Log.Read(ctx, events.BudgetScope.Filter(), 1) {
		if err != nil {
			return 0, 0, fmt.Errorf("budget: %w", err)
		}
		if env.Seq > l.last {
			break
		}
		e, err := env.Decode()
		if err != nil {
			return 0, 0, fmt.Errorf("budget: %s seq %d: %w", env.Subject, env.Seq, err)
		}
		switch e := e.(type) {
		case *events.BudgetReserved:
			for _, s := range e.Settles {
				settle(s)
			}
			if _, dup := open[e.ReservationID]; dup || !touches(*e) {
				continue
			}
			open[e.ReservationID] = *e
			usd += e.USD
			if e.Conversation == conv && e.ConversationCapUSD > 0 {
				capUSD = e.ConversationCapUSD
			}
		case *events.BudgetSettled:
			settle(*e)
		}
	}
	for _, s := range l.pending {
		settle(s)
	}
	return usd, capUSD, nil
}

// seenFilter is a Bloom filter of 2^20 bits (128 KiB) with three hashes:
// about 3% false positives after 100,000 conversations let go.
type seenFilter struct{ bits [1 << 14]uint64 }

func (f *seenFilter) positions(s string) [3]uint32 {
	h := fnv.New64a()
	h.Write([]byte(s))
	v := h.Sum64()
	h1, h2 := uint32(v), uint32(v>>32)|1
	const n = uint32(len(f.bits) * 64)
	return [3]uint32{h1 % n, (h1 + h2) % n, (h1 + 2*h2) % n}
}

func (f *seenFilter) add(s string) {
	for _, p := range f.positions(s) {
		f.bits[p/64] |= 1 << (p % 64)
	}
}

func (f *seenFilter) has(s string) bool {
	for _, p := range f.positions(s) {
		if f.bits[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}
