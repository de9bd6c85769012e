package team

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// View is a team as the pages and the API show it: the roster with
// WORK/IDLE, the board, the mail timeline and the protocol requests still
// pending.
type View struct {
	Team     string       `json:"team"`
	Plan     string       `json:"plan,omitempty"`
	Members  []MemberRow  `json:"members"`
	Tasks    []TaskRow    `json:"tasks"`
	Mail     []MailRow    `json:"mail"`
	Requests []RequestRow `json:"pending_requests"`
}

// TaskRow is one task of the board.
type TaskRow struct {
	ID          string   `json:"id"`
	Subject     string   `json:"subject"`
	Description string   `json:"description,omitempty"`
	Status      string   `json:"status"`
	Owner       string   `json:"owner,omitempty"`
	BlockedBy   []string `json:"blocked_by,omitempty"`
	OpenBlocks  []string `json:"open_blockers,omitempty"`
	Worktree    string   `json:"worktree,omitempty"`
	Branch      string   `json:"branch,omitempty"`
	Result      string   `json:"result,omitempty"`
}

// MailRow is one mail of the timeline, oldest first.
type MailRow struct {
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Type      string    `json:"type"`
	Content   string    `json:"content"`
	RequestID string    `json:"request_id,omitempty"`
	Status    string    `json:"status,omitempty"`
	TaskID    string    `json:"task_id,omitempty"`
}

// RequestRow is a pending protocol request.
type RequestRow struct {
	ID      string `json:"request_id"`
	Type    string `json:"type"`
	From    string `json:"from"`
	To      string `json:"to"`
	Content string `json:"content,omitempty"`
	TaskID  string `json:"task_id,omitempty"`
}

// Exists reports whether conversation id has a team: anything on its
// board or in its mailboxes.
func (r *Runtime) Exists(ctx context.Context, id string) (bool, error) {
	t, err := r.Team(ctx, id)
	if err != nil {
		return false, err
	}
	var ok bool
	err = t.View(ctx, func(b *Board, mb *Mailboxes) { ok = b.Seq > 0 || mb.Seq > 0 })
	return ok, err
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
