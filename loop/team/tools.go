package team

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
)

// Tools are the team's tools, for the registry. Which agent gets which is
// its seat's business (Runtime.Seated): the lead's come with team: lead,
// a member gets the board's.
// A nil runtime gives tools for listing (doctor, replay), which refuse to
// run.
func Tools(r *Runtime) []tools.Tool {
	if r == nil {
		r = New(Config{})
	}
	return []tools.Tool{
		tools.NewFunc[proposeArgs](proposeTeam{r}), tools.NewFunc[spawnArgs](spawnTeammate{r}), tools.NewFunc[noArgs](listTeammates{r}),
		tools.NewFunc[createTaskArgs](createTask{r}), tools.NewFunc[updateArgs](updateTask{r}), tools.NewFunc[noArgs](listTasks{r}), tools.NewFunc[getTaskArgs](getTask{r}), tools.NewFunc[claimArgs](claimTask{r}), tools.NewFunc[completeArgs](completeTask{r}),
		tools.NewFunc[sendArgs](sendMessage{r}), tools.NewFunc[shutdownArgs](requestShutdown{r}), tools.NewFunc[requestPlanArgs](requestPlan{r}), tools.NewFunc[reviewArgs](reviewPlan{r}), tools.NewFunc[submitArgs](submitPlan{r}),
		tools.NewFunc[worktreeArgs](createWorktree{r}),
	}
}

// namePattern is a member's (and a worktree's) name: one subject token,
// short, lower case.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

func checkName(what, name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("Not run: %s %q must be 1-32 of a-z, 0-9, _ and -, starting with a letter.", what, name)
	}
	if name == Lead {
		return fmt.Errorf("Not run: %q is the lead's own name on its team; choose another %s.", Lead, what)
	}
	return nil
}

// newID is a short random id with a prefix: task_1a2b3c4d.
func newID(prefix string) string {
	var b [4]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// seat is the caller's place on its team, read from its conversation.
func (r *Runtime) seat(ctx context.Context, env tools.Env) (loop.Seat, error) {
	if r.cfg.Convs == nil || r.cfg.Crew == nil {
		return loop.Seat{}, &Refusal{Text: "Not run: teams do not run here."}
	}
	conv, err := r.cfg.Convs.Get(ctx, env.Conversation)
	if err != nil {
		return loop.Seat{}, err
	}
	var st loop.Seat
	conv.View(func(s *loop.State) {
		// A member's conversation has its lead's as parent; it is a
		// teammate's seat, not a delegated child's.
		st = loop.Seat{Conversation: s.Conversation, Team: s.Conversation, Member: s.Member, Child: s.Member == "" && s.ParentConversation != ""}
		if s.Member != "" {
			st.Team = s.Team
		}
	})
	return st, nil
}

// errNotLead and errNotMember are the refusals of a tool used from the
// wrong seat.
var (
	errNotLead   = errors.New("Not run: only the team's lead may do this, from the lead's own conversation.")
	errNotMember = errors.New("Not run: only a teammate may do this; it claims and completes the tasks.")
)

// lead is the caller's team when it is the lead.
func (r *Runtime) lead(ctx context.Context, env tools.Env) (*Team, error) {
	s, err := r.seat(ctx, env)
	if err != nil {
		return nil, err
	}
	if s.Member != "" || s.Child {
		return nil, &Refusal{Text: errNotLead.Error()}
	}
	return r.Team(ctx, s.Team)
}

// member is the caller's team and name when it is a member.
func (r *Runtime) member(ctx context.Context, env tools.Env) (*Team, loop.Seat, error) {
	s, err := r.seat(ctx, env)
	if err != nil {
		return nil, s, err
	}
	if s.Member == "" {
		return nil, s, &Refusal{Text: errNotMember.Error()}
	}
	t, err := r.Team(ctx, s.Team)
	return t, s, err
}

// anyone is the caller's team and its name there (Lead for the lead).
func (r *Runtime) anyone(ctx context.Context, env tools.Env) (*Team, string, error) {
	s, err := r.seat(ctx, env)
	if err != nil {
		return nil, "", err
	}
	if s.Child {
		return nil, "", &Refusal{Text: "Not run: this conversation is not on a team."}
	}
	t, err := r.Team(ctx, s.Team)
	return t, cmp.Or(s.Member, Lead), err
}

// outcome turns a tool's error into its result: a refusal is data for the
// model, anything else means the harness is broken.
func outcome(text string, err error) (tools.Result, error) {
	var ref *Refusal
	if errors.As(err, &ref) {
		return tools.Result{Output: ref.Text, IsError: true}, nil
	}
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Output: text}, nil
}

// noArgs are the arguments of a tool that takes none.
type noArgs struct{}

// kickAfter has the runtime look at the team after a change.
func (r *Runtime) kickAfter(t *Team) { r.Kick(t.ID()) }
