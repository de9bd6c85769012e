package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/summarize"
	"github.com/my-agent-crew/crew/projections"
	"go.etcd.io/bbolt"
)

// Sweeps are the crew's periodic tasks on the scheduler: the approval
// expiry, the day end, and on a cluster the budget sweep.
type Sweeps struct {
	DB        *bbolt.DB
	Convs     *loop.Convs
	Worker    *loop.Worker
	Summaries *summarize.Summarizer
	// Ledger settles what stopped processes left open (Cluster only).
	Ledger *budget.Ledger
	// Cluster: this process shares its log with peers.
	Cluster bool
	Logger  *slog.Logger
}

// Periodic are the sweeps in the order they were registered.
func (s Sweeps) Periodic() []Periodic {
	sweep := s.Worker.SweepOnce
	if s.Cluster {
		sweep = s.clusterSweep
	}
	out := []Periodic{
		{Name: "approval-expiry", Every: 5 * time.Second, Run: sweep},
		{Name: "day-end", Every: 10 * time.Minute, Run: s.dayEnd},
	}
	if s.Cluster {
		out = append(out, Periodic{Name: "budget-sweep", Every: 30 * time.Second, Run: func(ctx context.Context) {
			if err := s.Ledger.SettleDead(ctx); err != nil {
				s.Logger.Error("budget: settling what stopped processes left open", "err", err)
			}
		}})
	}
	return out
}

// clusterSweep is the approval expiry on a cluster: a peer may have asked
// for an approval this process never loaded, or decided one it holds
// stale.
func (s Sweeps) clusterSweep(ctx context.Context) {
	if ids, err := projections.Recoverable(s.DB); err == nil {
		for _, id := range ids {
			if pc, err := projections.GetConversation(s.DB, id); err != nil || len(pc.PendingApprovals) == 0 {
				continue
			}
			if conv, err := s.Convs.Get(ctx, id); err == nil {
				conv.Refresh(ctx)
			}
		}
	}
	s.Worker.SweepOnce(ctx)
}

// dayEnd closes the conversations of past days, once the worker has taken
// up what a stop left.
func (s Sweeps) dayEnd(ctx context.Context) {
	select {
	case <-s.Worker.Recovered():
	default:
		return // the conversation list is still catching up
	}
	if err := s.Summaries.CloseDay(ctx); err != nil {
		s.Logger.Error("day end: some conversations were not closed", "err", err)
	}
}

// DayEndList lists the conversations for the day-end sweep from the
// conversations projection.
// A lead whose team still has work in hand is not settled (R-TEAM).
func DayEndList(db *bbolt.DB, teamBusy func(ctx context.Context, id string) bool) func(context.Context) ([]summarize.Conversation, error) {
	return func(ctx context.Context) ([]summarize.Conversation, error) {
		list, err := projections.ListConversations(db, 0)
		out := make([]summarize.Conversation, len(list))
		for i, c := range list {
			settled := c.Closed == nil && c.Status == projections.ConversationIdle && c.Queued == 0
			out[i] = summarize.Conversation{ID: c.ID, Channel: c.Channel, Day: c.Day,
				Settled: settled && (c.Day == "" || !teamBusy(ctx, c.ID))}
		}
		return out, err
	}
}
