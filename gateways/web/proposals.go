package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/refusal"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/ui"
	"go.etcd.io/bbolt"
)

// Memory is the MemoryService of a running crew: its Consolidator files,
// decides and rolls back, and what is shown is read from the memory
// projection once it has applied the change (read your writes).
type Memory struct {
	Service Consolidator
	DB      *bbolt.DB // the projections database
	// Fresh is the projections' read-your-writes (the Runner); with Log,
	// a listing or a read waits (at most two seconds, as a view does) for
	// what the log held when it was asked: a proposal a run filed is
	// listed once the run's end is seen.
	Fresh    projections.Freshness
	Log      *events.Log
	Location *time.Location
}

var _ MemoryService = (*Memory)(nil)

// Consolidator is what files, decides and rolls back memory proposals
// (consolidate.Service), each answered with the proposal as stored.
type Consolidator interface {
	Consolidate(ctx context.Context, agent, trigger string) (view.Proposal, error)
	Decide(ctx context.Context, id string, approve bool, channel string) (view.Proposal, error)
	Rollback(ctx context.Context, id, channel string) (view.Proposal, error)
}

// Proposal is a proposal as the API shows it: the projected view with
// its line diff and how many lines it adds and removes.
type Proposal struct {
	projections.Proposal
	Added   int         `json:"added"`
	Removed int         `json:"removed"`
	Diff    []view.Line `json:"diff,omitempty"`
}

func withDiff(p projections.Proposal) Proposal {
	out := Proposal{Proposal: p, Diff: view.Diff(p.Old, p.New)}
	for _, l := range out.Diff {
		switch l.Op {
		case view.Add:
			out.Added++
		case view.Del:
			out.Removed++
		}
	}
	return out
}

// get is one projected proposal with its diff.
func (m *Memory) get(id string) (Proposal, error) {
	p, err := projections.GetProposal(m.DB, id)
	if errors.Is(err, projections.ErrNotFound) {
		return Proposal{}, fmt.Errorf("%w: no proposal %q", refusal.ErrUnknownProposal, id)
	}
	if err != nil {
		return Proposal{}, err
	}
	return withDiff(p), nil
}

// list is the projected proposals of agent (all when ""), newest first,
// with their counts of lines but without the texts and the diff.
func (m *Memory) list(agent string) ([]Proposal, error) {
	ps, err := projections.ListProposals(m.DB, agent)
	if err != nil {
		return nil, err
	}
	out := make([]Proposal, 0, len(ps))
	for _, p := range ps {
		v := withDiff(p)
		v.Old, v.New, v.Diff = "", "", nil
		out = append(out, v)
	}
	return out, nil
}

// shown waits for the projection to apply what the service stored, then
// reads the proposal from it.
func (m *Memory) shown(ctx context.Context, p view.Proposal) (any, error) {
	if err := m.Fresh.WaitFor(ctx, p.LastSeq); err != nil {
		return nil, err
	}
	return m.get(p.ID)
}

func (m *Memory) Proposals(ctx context.Context, agent string) (any, error) {
	m.caughtUp(ctx)
	return m.list(agent)
}

func (m *Memory) Proposal(ctx context.Context, id string) (any, error) {
	m.caughtUp(ctx)
	return m.get(id)
}

// caughtUp waits, at most two seconds, for the memory projection to apply
// what the log holds (an agent's proposals are on its own scope, filed by
// any conversation).
func (m *Memory) caughtUp(ctx context.Context) {
	caughtUpOn(ctx, m.Log, m.Fresh, events.Root+".>")
}

func (m *Memory) Consolidate(ctx context.Context, agent, trigger string) (any, error) {
	p, err := m.Service.Consolidate(ctx, agent, trigger)
	if err != nil {
		return nil, err
	}
	return m.shown(ctx, p)
}

func (m *Memory) Decide(ctx context.Context, id string, approve bool, channel string) (any, error) {
	p, err := m.Service.Decide(ctx, id, approve, channel)
	if err != nil {
		return nil, err
	}
	return m.shown(ctx, p)
}

func (m *Memory) Rollback(ctx context.Context, id, channel string) (any, error) {
	p, err := m.Service.Rollback(ctx, id, channel)
	if err != nil {
		return nil, err
	}
	return m.shown(ctx, p)
}

// memoryPageRows is how many proposals /memory shows, newest first.
const memoryPageRows = 50

func (m *Memory) Rows(ctx context.Context, agent string) ([]ui.ProposalRow, error) {
	m.caughtUp(ctx)
	list, err := m.list(agent)
	if err != nil {
		return nil, err
	}
	rows := make([]ui.ProposalRow, 0, min(len(list), memoryPageRows))
	for _, s := range list[:min(len(list), memoryPageRows)] {
		p, err := m.get(s.ID)
		if err != nil {
			return nil, err
		}
		row := ui.ProposalRow{ID: p.ID, Agent: p.Agent, When: p.Proposed.In(m.Location).Format("Jan 2 15:04"), Kind: p.Kind,
			Status: p.Status, Auto: p.Auto, Reason: p.Reason, Trigger: p.Trigger, Days: daysText(p.Days),
			Decided: decidedText(p.Proposal, m.Location), Added: p.Added, Removed: p.Removed,
			File: p.FileName(), Tool: p.Tool, RunID: p.RunID, Untrusted: p.Untrusted}
		if p.Conversation != "" {
			row.Runs = "/c/" + url.PathEscape(p.Conversation) + "/runs"
		}
		for _, l := range p.Diff {
			row.Diff = append(row.Diff, ui.DiffLine{Op: string(rune(l.Op)), Text: l.Text})
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func daysText(days []string) string {
	switch len(days) {
	case 0:
		return "no days"
	case 1:
		return days[0]
	}
	return fmt.Sprintf("%s … %s (%d days)", days[0], days[len(days)-1], len(days))
}

// decidedText is "approved on web, Nov 30 18:02; rolled back on api, …".
func decidedText(p projections.Proposal, loc *time.Location) string {
	if p.Decided == nil {
		return ""
	}
	s := fmt.Sprintf("%s on %s, %s", strings.ReplaceAll(p.Decision, "_", "-"), cmp.Or(p.DecisionChannel, "?"), p.Decided.In(loc).Format("Jan 2 15:04"))
	if p.RolledBack != nil {
		s += fmt.Sprintf("; rolled back on %s, %s", cmp.Or(p.RollbackChannel, "?"), p.RolledBack.In(loc).Format("Jan 2 15:04"))
	}
	return s
}
