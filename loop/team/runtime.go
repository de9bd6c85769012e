package team

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools/shell"
)

// Channel is the channel of a teammate's conversation and of what the
// runtime delivers.
const Channel = "team"

// Convs is where the runtime reads and writes conversations
// (*loop.Convs).
type Convs interface {
	Get(ctx context.Context, id string) (*loop.Conv, error)
}

var _ Convs = (*loop.Convs)(nil)

// Config wires a Runtime.
type Config struct {
	Log   *events.Log
	Convs Convs
	// Crew is the crew the teammates are agents of.
	Crew   loop.Crew
	Logger *slog.Logger
	// Git is the git binary create_worktree runs ("git" when empty), in
	// Sandbox (nil: it does not run).
	Git     string
	Sandbox *shell.Sandbox
	// Home is the crew home, hidden from git but for the repository (the
	// host's worktree removal; create_worktree uses its call's).
	Home string
}

// Runtime runs the teams (seed 001): it folds each team's board and
// mailboxes from the log, delivers mail into conversations as framed team
// events, reports a teammate's finished run to the lead (result, then
// idle_notification), lets an idle teammate claim a ready task, answers
// shutdowns and seats conversations for the turn (loop.Teams). What it
// decides is always decided again from the log after a restart: it keeps
// nothing the log does not, except the working folder a teammate keeps
// until its turn ends (rebuilt from the task's owner and binding).
type Runtime struct {
	cfg   Config
	turns Turns

	// ctx is the runtime's life (Close ends it); run is the passes' while
	// this process runs them (Run: the cluster's leader), nil otherwise.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	run    *running
	teams  map[string]*Team
	convOf map[string]string // member conversation → team
	// used is each kept fold's last use (a tick of clock): the least
	// recently used idle one is let go past maxTeams (trim).
	used     map[string]uint64
	clock    uint64
	maxTeams int
	leases   map[string]lease // by member conversation
	passes   map[string]bool  // team → kicked again while its pass ran
	// rerouting are the member conversations whose event kickSeat tries
	// again to route.
	rerouting map[string]bool
	// trimming: a trimSoon runs (again: asked once more meanwhile); wg
	// is its, waited for by Close.
	trimming, trimAgain bool
	wg                  sync.WaitGroup

	// replay, when set, is what the boards are read from instead of
	// cfg.Log (Replaying).
	replay loop.Appender
}

// lease is the folder a member's tools use for a task it claimed, kept
// until the member is idle again (seed 001 §9).
type lease struct{ task, dir string }

// New returns a runtime; Start runs it.
func New(cfg Config) *Runtime {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Git == "" {
		cfg.Git = "git"
	}
	r := &Runtime{cfg: cfg, teams: map[string]*Team{}, convOf: map[string]string{}, used: map[string]uint64{}, maxTeams: maxTeams, leases: map[string]lease{}, passes: map[string]bool{},
		rerouting: map[string]bool{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

var _ loop.Teams = (*Runtime)(nil)

// Replaying is the runtime crew replay seats its turns with
// (loop.ReplayWith): the boards, the mailboxes and the lead's
// conversation are read from log — the recorded events, fed as the
// replay goes — and nothing is
// followed, delivered, claimed or run.
func (r *Runtime) Replaying(log loop.Appender) loop.Teams {
	cfg := r.cfg
	cfg.Log, cfg.Convs = nil, loop.NewConvs(log, nil) // the lead's conversation too, for its workspace
	rr := New(cfg)
	rr.replay = log
	return rr
}

// Turns is what the runtime has the turn worker do (loop.Worker): run a
// conversation that has work, stop one for the owner.
type Turns interface {
	Kick(conversation string)
	Stop(ctx context.Context, conversation, scope, by string) (loop.Stopped, error)
}

// Bind gives the runtime the worker that runs its conversations; every
// process binds one (the tools and the owner's stop run anywhere), while
// only one runs the passes (Run).
func (r *Runtime) Bind(turns Turns) { r.turns = turns }

// running is one span of Run: its passes stop with ctx.
type running struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Run runs the passes until stop is called or ctx ends: it follows the
// teams' scopes from the start of the log — so every team is reconciled
// once when a process starts running them (a restart, a new leader) — and
// the runs of their conversations from the end of the log on (a run that
// finished before is read by that reconciling pass, not replayed: on a
// home of a million events that replay was most of start's time and
// memory), kicking the worker for conversations with work. One process
// of a cluster runs it at a time, the leader (R-ES-8); elsewhere Kick does
// nothing and the leader's follow sees what the tools wrote.
func (r *Runtime) Run(ctx context.Context) (stop func()) {
	r.mu.Lock()
	if r.run != nil || r.ctx.Err() != nil {
		r.mu.Unlock()
		return func() {}
	}
	ru := &running{}
	ru.ctx, ru.cancel = context.WithCancel(ctx)
	r.run = ru
	r.mu.Unlock()
	from, err := r.cfg.Log.Last(ru.ctx, events.Root+".>")
	if err != nil {
		r.cfg.Logger.Error("team runtime: last sequence; following the runs from the start", "err", err)
		from = 0
	}
	r.follow(ru, []string{events.Root + ".team.>", events.Root + ".mail.>"}, 0)
	r.follow(ru, []string{events.Root + ".conv.*." + events.TypeRunFinished, events.Root + ".conv.*." + events.TypeApprovalDecided}, from+1)
	return func() {
		r.mu.Lock()
		ru.cancel()
		r.mu.Unlock()
		ru.wg.Wait()
		r.mu.Lock()
		if r.run == ru {
			r.run = nil
		}
		r.mu.Unlock()
	}
}

// Running says whether this process runs the passes now.
func (r *Runtime) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.run != nil && r.run.ctx.Err() == nil
}

// follow kicks the teams the events of filters from from on concern.
func (r *Runtime) follow(ru *running, filters []string, from uint64) {
	ru.wg.Go(func() {
		for env, err := range r.cfg.Log.FollowAll(ru.ctx, filters, from) {
			if err != nil {
				if ru.ctx.Err() == nil {
					r.cfg.Logger.Error("team runtime: follow", "err", err)
				}
				return
			}
			scope := events.ScopeOf(env.Subject)
			switch scope.Kind() {
			case "team":
				r.Kick(scope.ID())
			case "mail":
				team, _, _ := strings.Cut(scope.ID(), ".")
				r.Kick(team)
			case "conv":
				r.mu.Lock()
				team, member := r.convOf[scope.ID()]
				_, lead := r.teams[scope.ID()]
				r.mu.Unlock()
				switch {
				case member:
					r.Kick(team)
				case lead:
					r.Kick(scope.ID())
				case strings.Contains(scope.ID(), "-t-"):
					// A member of a team whose fold was let go (trim): its
					// conversation's seat names the team.
					r.kickSeat(ru, scope.ID())
				}
			}
		}
	})
}

// kickSeat kicks the team conversation conv is a member of. A
// conversation that cannot be loaded now (the store) is tried again after
// a pause until it loads or the passes stop: no later pass would derive
// this kick again, since its team was let go as idle and only its own
// events kick it.
func (r *Runtime) kickSeat(ru *running, conv string) {
	if r.routeSeat(ru, conv) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rerouting[conv] {
		return // its retry is under way
	}
	r.rerouting[conv] = true
	ru.wg.Go(func() {
		defer func() {
			r.mu.Lock()
			delete(r.rerouting, conv)
			r.mu.Unlock()
		}()
		for pause := rerouteFirst; ; pause = min(2*pause, rerouteMax) {
			select {
			case <-ru.ctx.Done():
				return
			case <-time.After(pause):
			}
			if r.routeSeat(ru, conv) {
				return
			}
		}
	})
}

// routeSeat kicks conv's team (none when conv has no seat); false: conv
// could not be loaded, try again. One that cannot be decoded is dropped:
// the worker parks it, and the next start's reconciling pass sees its
// team.
func (r *Runtime) routeSeat(ru *running, conv string) (done bool) {
	seat, err := r.seatOf(ru.ctx, conv)
	if _, undecodable := errors.AsType[*events.DecodeError](err); undecodable {
		r.cfg.Logger.Error("team runtime: a member conversation's event not routed to its team: its log cannot be read", "conversation", conv, "err", err)
		return true
	}
	if err != nil && ru.ctx.Err() == nil {
		r.cfg.Logger.Warn("team runtime: a member conversation's event not routed to its team yet: the conversation could not be loaded; trying again", "conversation", conv, "err", err)
		return false
	}
	if seat != "" {
		r.Kick(seat)
	}
	return true
}

// The pauses of kickSeat's retries: doubling from rerouteFirst.
const (
	rerouteFirst = time.Second
	rerouteMax   = 30 * time.Second
)

// seatOf is the team conv's seat names ("": none, not a member).
func (r *Runtime) seatOf(ctx context.Context, conv string) (string, error) {
	c, err := r.cfg.Convs.Get(ctx, conv)
	if err != nil {
		return "", err
	}
	var seat string
	c.View(func(st *loop.State) {
		if st.Member != "" {
			seat = st.Team
		}
	})
	return seat, nil
}

// Close stops the runtime and waits for its passes and its trim.
func (r *Runtime) Close() {
	r.mu.Lock()
	r.cancel()
	ru := r.run
	if ru != nil {
		ru.cancel()
	}
	r.mu.Unlock()
	if ru != nil {
		ru.wg.Wait()
	}
	r.wg.Wait()
}

// Kick schedules a pass over a team; one pass at a time per team, and
// none on a process that does not run them (Run).
func (r *Runtime) Kick(team string) {
	if events.ValidID(team) != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ru := r.run
	if ru == nil || ru.ctx.Err() != nil {
		return
	}
	if _, running := r.passes[team]; running {
		r.passes[team] = true
		return
	}
	r.passes[team] = false
	ru.wg.Go(func() {
		for {
			if err := r.reconcile(ru.ctx, team); err != nil && ru.ctx.Err() == nil {
				r.cfg.Logger.Error("team pass", "team", team, "err", err)
			}
			r.mu.Lock()
			again := r.passes[team] && ru.ctx.Err() == nil
			if !again {
				delete(r.passes, team)
				r.mu.Unlock()
				r.trim(ru.ctx)
				return
			}
			r.passes[team] = false
			r.mu.Unlock()
		}
	})
}

// Idle reports whether no team pass or trim is running (tests wait on
// it).
func (r *Runtime) Idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.passes) == 0 && !r.trimming
}

// Team returns team id's fold, caught up.
func (r *Runtime) Team(ctx context.Context, id string) (*Team, error) {
	r.mu.Lock()
	t := r.teams[id]
	if t != nil {
		r.clock++
		r.used[id] = r.clock
	}
	r.mu.Unlock()
	if t != nil {
		return t, t.View(ctx, func(*Board, *Mailboxes) {})
	}
	var log loop.Appender
	switch {
	case r.replay != nil:
		log = r.replay
	case r.cfg.Log != nil:
		log = r.cfg.Log
	default:
		return nil, errors.New("team: no log to read the board from")
	}
	t, err := Open(ctx, log, id)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if have := r.teams[id]; have != nil {
		t = have
	} else {
		r.teams[id] = t
	}
	r.clock++
	r.used[id] = r.clock
	r.mu.Unlock()
	r.learn(t)
	r.trimSoon()
	return t, nil
}

// learn records which conversations are the team's members'.
func (r *Runtime) learn(t *Team) {
	var convs []string
	t.mu.Lock()
	for _, m := range t.board.Members {
		convs = append(convs, m.Conversation)
	}
	t.mu.Unlock()
	r.mu.Lock()
	if r.teams[t.id] == t { // not let go meanwhile (trim)
		for _, c := range convs {
			r.convOf[c] = t.id
		}
	}
	r.mu.Unlock()
}

// MemberConversation is member name's conversation in team
// (view.MemberConversation).
func MemberConversation(team, name string) string { return view.MemberConversation(team, name) }

// memberView is what a pass reads of a member's conversation.
type memberView struct {
	opened, idle, closed bool
	mailSeen             uint64
	assigned             string
	lastRun              string
	lastEnd              *loop.RunEnd
}

func viewMember(st *loop.State) memberView {
	v := memberView{opened: st.Agent != "", closed: st.Closed, mailSeen: st.MailSeen, assigned: st.Assigned, lastRun: st.LastRun}
	v.idle = st.OpenRun == "" && len(st.Queued) == 0 && st.PendingApproval() == nil
	if st.LastEnd != nil {
		end := *st.LastEnd
		v.lastEnd = &end
	}
	return v
}

// reconcile is one pass over a team: each member's conversation is
// opened, its finished run reported, and — when it is idle — its mail
// delivered first, then its claimed task assigned, then a ready task
// claimed for it (seed 001 §6); last the lead's mail is delivered when the
// lead is idle. Everything is decided from the log, so a pass after a
// crash picks up where the last one stopped.
func (r *Runtime) reconcile(ctx context.Context, id string) error {
	t, err := r.Team(ctx, id)
	if err != nil {
		return err
	}
	r.learn(t)
	var roster []Member
	t.View(ctx, func(b *Board, _ *Mailboxes) {
		for _, name := range b.Roster {
			roster = append(roster, *b.Members[name])
		}
	})
	held, err := r.held(ctx, t)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range roster {
		if err := r.reconcileMember(ctx, t, m, held); err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", m.Name, err))
		}
	}
	if held {
		return errors.Join(errs...) // the owner stopped the team: nothing reaches the lead until it runs again
	}
	if err := r.deliverLead(ctx, t); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// reconcileMember is one member's part of a pass; held (the owner stopped
// the team) records what happened — reports, shutdowns — but delivers and
// claims nothing.
func (r *Runtime) reconcileMember(ctx context.Context, t *Team, m Member, held bool) error {
	if m.Stopped || m.Conversation == "" {
		return nil
	}
	conv, err := r.cfg.Convs.Get(ctx, m.Conversation)
	if err != nil {
		return err
	}
	if err := r.openMember(ctx, t, conv, m); err != nil {
		return err
	}
	var v memberView
	conv.View(func(st *loop.State) { v = viewMember(st) })
	if v.closed {
		return nil
	}
	if !v.idle && held {
		return nil
	}
	if !v.idle {
		// WORK: its mail reaches the running turn before its next model
		// call (a shutdown request also ends the turn there: Stop).
		var unseen []Mail
		t.View(ctx, func(_ *Board, mb *Mailboxes) { unseen = slices.Clone(mb.Unseen(m.Name, v.mailSeen)) })
		if len(unseen) > 0 {
			return r.steer(ctx, conv, mailItems(unseen), unseen[len(unseen)-1].Seq)
		}
		return nil
	}
	// WORK → IDLE: the run is reported (result, then idle_notification),
	// and the folder kept for the turn is let go.
	if err := r.report(ctx, t, m, v); err != nil {
		return err
	}
	r.release(m.Conversation)
	if stopped, err := r.shutdown(ctx, t, m); err != nil || stopped || held {
		return err
	}
	// Mail first: shutdown, plans and the lead's instructions come before
	// opportunistic work.
	var unseen []Mail
	var cur *Task
	t.View(ctx, func(b *Board, mb *Mailboxes) {
		unseen = slices.Clone(mb.Unseen(m.Name, v.mailSeen))
		if c := b.Current(m.Name); c != nil {
			cp := *c
			cur = &cp
		}
	})
	if len(unseen) > 0 {
		return r.deliver(ctx, conv, mailItems(unseen), unseen[len(unseen)-1].Seq, "")
	}
	if cur != nil {
		if cur.ID == v.assigned {
			return nil // its task is in the conversation; the member went idle on it
		}
		return r.deliver(ctx, conv, []events.TeamItem{assignment(cur)}, 0, cur.ID)
	}
	// The board: claim at most one ready task.
	task, err := r.autoClaim(ctx, t, m.Name)
	if err != nil || task == nil {
		return err
	}
	return r.deliver(ctx, conv, []events.TeamItem{assignment(task)}, 0, task.ID)
}

// openMember opens the member's conversation if it is not yet.
func (r *Runtime) openMember(ctx context.Context, t *Team, conv *loop.Conv, m Member) error {
	lead, err := r.cfg.Convs.Get(ctx, t.id)
	if err != nil {
		return err
	}
	var ttl int
	var source string
	lead.View(func(st *loop.State) { ttl, source = st.ApprovalTTL, st.Channel })
	_, err = conv.Append(ctx, func(st *loop.State) ([]events.Event, error) {
		if st.Agent != "" {
			return nil, nil
		}
		title := m.Name
		if m.Responsibility != "" {
			title += " — " + m.Responsibility
		}
		return []events.Event{&events.ConversationOpened{Agent: m.Agent, Channel: Channel, Title: title,
			RootID: t.id, RootSource: source, ParentConversation: t.id, Autonomous: true, ApprovalTTLSeconds: ttl,
			Team: t.id, Member: m.Name}}, nil
	})
	return err
}

// report tells the lead what the member's finished run produced, once per
// run: its result, then that it is idle — two events, in that order.
func (r *Runtime) report(ctx context.Context, t *Team, m Member, v memberView) error {
	if v.lastRun == "" || v.lastEnd == nil {
		return nil
	}
	end := v.lastEnd
	_, err := t.Send(ctx, Lead, func(b *Board, mb *Mailboxes) ([]events.Event, error) {
		if mb.Reported[v.lastRun] {
			return nil, nil
		}
		var evs []events.Event
		result, task := end.Text, ""
		// The tasks it completed since its last report, each with its
		// result; the run's final reply goes with the last.
		for _, id := range b.Order {
			if tk := b.Tasks[id]; tk.Owner == m.Name && tk.Status == events.TaskDone && !reportedTask(mb, m.Name, id) {
				if task != "" {
					evs = append(evs, &events.MailSent{From: m.Name, To: Lead, Type: events.MailResult, Content: strings.TrimSpace(b.Tasks[task].Result), TaskID: task, Run: v.lastRun})
				}
				task = id
				result = strings.TrimSpace(cmp.Or(tk.Result, end.Text))
				if end.Text != "" && end.Text != tk.Result {
					result = tk.Result + "\n\n" + end.Text
				}
			}
		}
		switch end.Status {
		case events.RunFailed:
			result = fmt.Sprintf("My run failed (%s). %s", cmp.Or(end.Error, end.Reason), end.Text)
		case events.RunHalted:
			result = fmt.Sprintf("My run was stopped (%s). %s", end.Reason, end.Text)
		case events.RunStopped:
			result = "The owner stopped my run. " + end.Text
		}
		if strings.TrimSpace(result) != "" {
			evs = append(evs, &events.MailSent{From: m.Name, To: Lead, Type: events.MailResult, Content: strings.TrimSpace(result), TaskID: task, Run: v.lastRun})
		}
		return append(evs, &events.MailSent{From: m.Name, To: Lead, Type: events.MailIdle, Content: "Waiting for more work.", Run: v.lastRun}), nil
	})
	if err != nil {
		return err
	}
	if end.Status == events.RunFailed {
		// A failed run gives its unfinished assignment back to the board.
		_, err = t.AppendBoard(ctx, func(b *Board, _ *Mailboxes) ([]events.Event, error) {
			if cur := b.Current(m.Name); cur != nil {
				return []events.Event{&events.TaskReleased{TaskID: cur.ID, Owner: m.Name, Reason: "run failed"}}, nil
			}
			return nil, nil
		})
	}
	return err
}

func reportedTask(mb *Mailboxes, member, task string) bool {
	for _, ml := range mb.Box[Lead] {
		if ml.From == member && ml.Type == events.MailResult && ml.TaskID == task {
			return true
		}
	}
	return false
}

// shutdown answers a pending shutdown request to an idle member: it
// approves, its claimed task goes back to the board, and its loop ends.
func (r *Runtime) shutdown(ctx context.Context, t *Team, m Member) (bool, error) {
	var req *Request
	t.View(ctx, func(_ *Board, mb *Mailboxes) {
		if p := mb.Pending(events.MailShutdownRequest, m.Name); p != nil {
			cp := *p
			req = &cp
		}
	})
	if req == nil {
		return false, nil
	}
	if _, err := t.Send(ctx, Lead, func(_ *Board, mb *Mailboxes) ([]events.Event, error) {
		if p := mb.Requests[req.ID]; p == nil || p.Status != events.ProtocolPending {
			return nil, nil
		}
		return []events.Event{&events.MailSent{From: m.Name, To: Lead, Type: events.MailShutdownResponse, RequestID: req.ID,
			Status: events.ProtocolApproved, Content: "Finished my current step; shutting down."}}, nil
	}); err != nil {
		return false, err
	}
	_, err := t.AppendBoard(ctx, func(b *Board, _ *Mailboxes) ([]events.Event, error) {
		if mem := b.Members[m.Name]; mem == nil || mem.Stopped {
			return nil, nil
		}
		var evs []events.Event
		if cur := b.Current(m.Name); cur != nil {
			evs = append(evs, &events.TaskReleased{TaskID: cur.ID, Owner: m.Name, Reason: "shutdown"})
		}
		return append(evs, &events.TeammateStopped{Name: m.Name, RequestID: req.ID}), nil
	})
	return true, err
}

// autoClaim claims the first ready task for an idle member, if any.
func (r *Runtime) autoClaim(ctx context.Context, t *Team, member string) (*Task, error) {
	var claimed *Task
	_, err := t.AppendBoard(ctx, func(b *Board, _ *Mailboxes) ([]events.Event, error) {
		claimed = nil
		if b.Current(member) != nil {
			return nil, nil
		}
		if tk := r.claimable(b); tk != nil {
			cp := *tk
			claimed = &cp
			return []events.Event{&events.TaskClaimed{TaskID: tk.ID, Owner: member, How: "auto"}}, nil
		}
		return nil, nil
	})
	if err != nil || claimed == nil {
		return nil, err
	}
	claimed.How = "auto"
	return claimed, nil
}

// claimable is the first ready task a pass would claim for an idle
// member: one whose folder can be resolved (a broken binding is not
// claimed: fail closed); nil: none.
func (r *Runtime) claimable(b *Board) *Task {
	for _, tk := range b.Ready() {
		if _, refusal := r.taskDir(b, tk); refusal == "" {
			return tk
		}
	}
	return nil
}

// assignment is the delivered item that gives a member its task.
func assignment(t *Task) events.TeamItem {
	typ := loop.ItemAssigned
	if t.How == "auto" {
		typ = loop.ItemAutoClaimed
	}
	content := t.Subject
	if t.Description != "" {
		content += "\n" + t.Description
	}
	content += "\nWhen it is done, call complete_task with task_id " + t.ID + " and the result."
	return events.TeamItem{From: Lead, Type: typ, Content: content, TaskID: t.ID}
}

func mailItems(ms []Mail) []events.TeamItem {
	items := make([]events.TeamItem, len(ms))
	for i, m := range ms {
		items[i] = events.TeamItem{From: m.From, Type: m.Type, Content: m.Content, RequestID: m.RequestID, Status: m.Status, TaskID: m.TaskID}
	}
	return items
}

// deliver appends items to an idle conversation as one framed message
// (through: the mailbox sequence it covers; assigned: the task it gives)
// and has the worker run it. Decided on the conversation's state, so a
// delivery is stored once.
func (r *Runtime) deliver(ctx context.Context, conv *loop.Conv, items []events.TeamItem, through uint64, assigned string) error {
	stored, err := conv.Append(ctx, func(st *loop.State) ([]events.Event, error) {
		if st.Closed || st.OpenRun != "" || len(st.Queued) > 0 || st.PendingApproval() != nil {
			return nil, nil // not idle any more: the next pass delivers
		}
		if through > 0 && st.MailSeen >= through {
			return nil, nil
		}
		if assigned != "" && st.Assigned == assigned && through == 0 {
			return nil, nil
		}
		lines := make([]string, len(items))
		for i, it := range items {
			lines[i] = fmt.Sprintf("%s (%s): %s", it.From, it.Type, firstLine(it.Content))
		}
		return []events.Event{&events.MessageReceived{Channel: Channel, From: Channel, Text: strings.Join(lines, "\n"),
			Team: &events.TeamDelivery{Through: through, Items: items, Assigned: assigned}}}, nil
	})
	if err != nil {
		return err
	}
	if len(stored) > 0 && r.turns != nil {
		r.turns.Kick(conv.ID())
	}
	return nil
}

// steer delivers mail into a member's running turn: a steer the loop
// applies at the turn's next step boundary, framed as team events.
// Decided on the conversation's state, so a delivery is stored once; a
// turn that ended meanwhile gets it as a message on the next pass.
func (r *Runtime) steer(ctx context.Context, conv *loop.Conv, items []events.TeamItem, through uint64) error {
	_, err := conv.Append(ctx, func(st *loop.State) ([]events.Event, error) {
		if st.Closed || st.OpenRun == "" || st.MailSeen >= through {
			return nil, nil
		}
		lines := make([]string, len(items))
		for i, it := range items {
			lines[i] = fmt.Sprintf("%s (%s): %s", it.From, it.Type, firstLine(it.Content))
		}
		return []events.Event{&events.SteerReceived{Channel: Channel, Text: strings.Join(lines, "\n"),
			Team: &events.TeamDelivery{Through: through, Items: items}}}, nil
	})
	return err
}

// Stop implements loop.Teams: a member with a pending shutdown request
// ends its turn at the next step boundary; the pass that finds it idle
// then answers the request and stops it (seed 001 §11).
func (r *Runtime) Stop(seat loop.Seat) string {
	if seat.Member == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(r.ctx, waitTimeout)
	defer cancel()
	t, err := r.Team(ctx, seat.Team)
	if err != nil {
		return ""
	}
	var why string
	t.View(ctx, func(_ *Board, mb *Mailboxes) {
		if p := mb.Pending(events.MailShutdownRequest, seat.Member); p != nil {
			why = "the lead asked this teammate to shut down (request " + p.ID + ")"
		}
	})
	return why
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// deliverLead delivers the lead's unseen mail when its conversation is
// idle: the runtime starts the lead's next turn (seed 001 §4); the model
// never polls.
func (r *Runtime) deliverLead(ctx context.Context, t *Team) error {
	conv, err := r.cfg.Convs.Get(ctx, t.id)
	if err != nil {
		return err
	}
	var seen uint64
	var opened bool
	conv.View(func(st *loop.State) { seen, opened = st.MailSeen, st.Agent != "" })
	if !opened {
		return nil
	}
	var unseen []Mail
	t.View(ctx, func(_ *Board, mb *Mailboxes) { unseen = slices.Clone(mb.Unseen(Lead, seen)) })
	if len(unseen) == 0 {
		return nil
	}
	return r.deliver(ctx, conv, mailItems(unseen), unseen[len(unseen)-1].Seq, "")
}

// release lets go of the folder a member kept for its turn.
func (r *Runtime) release(conversation string) {
	r.mu.Lock()
	delete(r.leases, conversation)
	r.mu.Unlock()
}

func (r *Runtime) setLease(conversation, task, dir string) {
	r.mu.Lock()
	r.leases[conversation] = lease{task: task, dir: dir}
	r.mu.Unlock()
}

// waitTimeout bounds what Workdir, which has no context, may wait on.
const waitTimeout = 10 * time.Second
