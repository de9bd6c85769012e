package team

import (
	"cmp"
	"context"
	"slices"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// maxTeams is how many teams' folds a runtime keeps (docs/performance.md's
// caches): past it the least recently used idle one is let go, and opened
// again from the log by the next event or call that needs it (Team; a
// member's conversation event finds its team by its seat).
const maxTeams = 256

// trimSoon trims on the runtime's own context, off the path of the call
// that opened a fold: a trim past many busy teams reads each one's
// conversations, and must not spend the deadline of the Workdir, Prompt or
// Stop that asked for a team (Workdir then said "no claimed task", Stop
// ""). One trim runs at a time; a call meanwhile has it trim once more.
func (r *Runtime) trimSoon() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.teams) <= r.maxTeams || r.ctx.Err() != nil {
		return
	}
	if r.trimming {
		r.trimAgain = true
		return
	}
	r.trimming = true
	r.wg.Go(func() {
		for {
			r.trim(r.ctx)
			r.mu.Lock()
			if !r.trimAgain || r.ctx.Err() != nil {
				r.trimming, r.trimAgain = false, false
				r.mu.Unlock()
				return
			}
			r.trimAgain = false
			r.mu.Unlock()
		}
	})
}

// trim lets go of the least recently used idle folds while more than
// maxTeams are kept. A team that is not idle stays, so the bound is
// exceeded only by the teams with work in flight.
func (r *Runtime) trim(ctx context.Context) {
	type kept struct {
		id   string
		t    *Team
		used uint64
	}
	r.mu.Lock()
	over := len(r.teams) - r.maxTeams
	if over <= 0 {
		r.mu.Unlock()
		return
	}
	cands := make([]kept, 0, len(r.teams))
	for id, t := range r.teams {
		if _, pass := r.passes[id]; !pass {
			cands = append(cands, kept{id, t, r.used[id]})
		}
	}
	r.mu.Unlock()
	slices.SortFunc(cands, func(a, b kept) int { return cmp.Compare(a.used, b.used) })
	for _, c := range cands {
		if ctx.Err() != nil {
			return
		}
		if !r.idle(ctx, c.t) {
			continue
		}
		r.mu.Lock()
		if len(r.teams) <= r.maxTeams { // another trim let one go meanwhile
			r.mu.Unlock()
			return
		}
		_, pass := r.passes[c.id]
		if r.teams[c.id] == c.t && r.used[c.id] == c.used && !pass {
			delete(r.teams, c.id)
			delete(r.used, c.id)
			for conv, team := range r.convOf {
				if team == c.id {
					delete(r.convOf, conv)
				}
			}
		}
		r.mu.Unlock()
	}
}

// idle says whether nothing of team t waits on its fold: the lead's
// conversation is idle with all its mail seen, and each member that is
// not stopped is closed, or idle with its mail seen, its last run
// reported, no folder kept, its task delivered and no ready task left
// for it to claim — what a pass would act on. The owner's hold on the
// team keeps it too (the lead's next run lets it go on).
func (r *Runtime) idle(ctx context.Context, t *Team) bool {
	held, err := r.held(ctx, t)
	if err != nil || held {
		return false
	}
	lead, err := r.cfg.Convs.Get(ctx, t.id)
	if err != nil {
		return false
	}
	var leadSeen uint64
	leadIdle, opened := true, false
	lead.View(func(st *loop.State) {
		leadSeen, opened = st.MailSeen, st.Agent != ""
		if opened {
			leadIdle = st.OpenRun == "" && len(st.Queued) == 0 && st.PendingApproval() == nil
		}
	})
	if !leadIdle {
		return false
	}
	var roster []Member
	busy := false
	if err := t.View(ctx, func(b *Board, mb *Mailboxes) {
		for _, name := range b.Roster {
			roster = append(roster, *b.Members[name])
		}
		busy = opened && len(mb.Unseen(Lead, leadSeen)) > 0 // deliverLead waits for it to open
	}); err != nil || busy {
		return false
	}
	for _, m := range roster {
		if m.Stopped || m.Conversation == "" {
			continue
		}
		r.mu.Lock()
		_, leased := r.leases[m.Conversation]
		r.mu.Unlock()
		if leased {
			return false
		}
		conv, err := r.cfg.Convs.Get(ctx, m.Conversation)
		if err != nil {
			return false
		}
		var v memberView
		conv.View(func(st *loop.State) { v = viewMember(st) })
		if v.closed {
			continue
		}
		if !v.opened || !v.idle {
			return false
		}
		t.View(ctx, func(b *Board, mb *Mailboxes) {
			cur := b.Current(m.Name)
			switch {
			case len(mb.Unseen(m.Name, v.mailSeen)) > 0, mb.Pending(events.MailShutdownRequest, m.Name) != nil:
				busy = true
			case v.lastRun != "" && v.lastEnd != nil && !mb.Reported[v.lastRun]:
				busy = true
			case cur != nil && cur.ID != v.assigned:
				busy = true
			case cur == nil && r.claimable(b) != nil:
				// A ready task no pass would claim (its worktree binding
				// is broken) keeps nothing: mending the binding is an
				// event of the team (or a start's reconciling pass),
				// which opens the fold again.
				busy = true
			}
		})
		if busy {
			return false
		}
	}
	return true
}
