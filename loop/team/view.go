package team

import (
	"cmp"
	"context"
	"slices"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/loop"
)

// View is a team as the pages and the API show it (view.Team): the roster
// with WORK/IDLE, the board, the mail timeline and the protocol requests
// still pending.
type View = view.Team

// TaskRow is one task of the board.
type TaskRow = view.TeamTask

// MailRow is one mail of the timeline, oldest first.
type MailRow = view.TeamMail

// RequestRow is a pending protocol request.
type RequestRow = view.TeamRequest

// Exists reports whether conversation id has a team: anything on its
// board or in its mailboxes.
func (r *Runtime) Exists(ctx context.Context, id string) (bool, error) {
	if err := events.ValidID(id); err != nil {
		return false, nil
	}
	// Asked for every conversation shown: the log's last sequences, not a
	// fold kept for a conversation that leads nothing.
	for _, filter := range []string{events.Team(id).Filter(), events.MailOf(id)} {
		last, err := r.cfg.Log.Last(ctx, filter)
		if err != nil || last > 0 {
			return last > 0, err
		}
	}
	return false, nil
}

// View is team id as the pages show it.
func (r *Runtime) View(ctx context.Context, id string) (View, error) {
	t, err := r.Team(ctx, id)
	if err != nil {
		return View{}, err
	}
	v := View{Team: id, Members: []MemberRow{}, Tasks: []TaskRow{}, Mail: []MailRow{}, Requests: []RequestRow{}}
	err = t.View(ctx, func(b *Board, mb *Mailboxes) {
		v.Plan = b.Plan
		for _, tid := range b.Order {
			tk := b.Tasks[tid]
			row := TaskRow{ID: tk.ID, Subject: tk.Subject, Description: tk.Description, Status: tk.Status, Owner: tk.Owner,
				BlockedBy: tk.BlockedBy, OpenBlocks: b.Blockers(tk), Result: tk.Result}
			if tk.Worktree != nil {
				row.Worktree, row.Branch = tk.Worktree.Name, tk.Worktree.Branch
			}
			v.Tasks = append(v.Tasks, row)
		}
		var all []Mail
		for _, box := range mb.Box {
			all = append(all, box...)
		}
		sortMail(all)
		for _, m := range all {
			v.Mail = append(v.Mail, MailRow{Seq: m.Seq, Time: m.Time, From: m.From, To: m.To, Type: m.Type, Content: m.Content,
				RequestID: m.RequestID, Status: m.Status, TaskID: m.TaskID})
		}
		for _, rid := range mb.Order {
			if q := mb.Requests[rid]; q.Status == "pending" {
				v.Requests = append(v.Requests, RequestRow{ID: q.ID, Type: q.Type, From: q.From, To: q.To, Content: q.Content, TaskID: q.TaskID})
			}
		}
	})
	if err != nil {
		return View{}, err
	}
	rows, err := r.Members(ctx, t)
	if err != nil {
		return View{}, err
	}
	if rows != nil {
		v.Members = rows
	}
	return v, nil
}

func sortMail(ms []Mail) {
	slices.SortFunc(ms, func(a, b Mail) int { return cmp.Compare(a.Seq, b.Seq) })
}

// Busy reports whether conversation id leads a team with work in hand: a
// teammate working or holding a task, or mail the lead has not been given.
// The day-end close leaves such a conversation open, or its teammates'
// results would have nowhere to go.
func (r *Runtime) Busy(ctx context.Context, id string) bool {
	ok, err := r.Exists(ctx, id)
	if err != nil || !ok {
		return false
	}
	v, err := r.View(ctx, id)
	if err != nil {
		return true // unknown: keep it open
	}
	for _, m := range v.Members {
		if m.State == StateWork || (m.State != StateStopped && m.Task != "") {
			return true
		}
	}
	conv, err := r.cfg.Convs.Get(ctx, id)
	if err != nil {
		return true
	}
	var seen uint64
	conv.View(func(st *loop.State) { seen = st.MailSeen })
	t, err := r.Team(ctx, id)
	if err != nil {
		return true
	}
	var unseen bool
	t.View(ctx, func(_ *Board, mb *Mailboxes) { unseen = len(mb.Unseen(Lead, seen)) > 0 })
	return unseen
}
