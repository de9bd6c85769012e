// Package schedule holds schedule_create, the tool an agent proposes a job
// with. The scheduler itself is a gateway (gateways/scheduler); the tool
// reaches it only through Adder, which cmd/crew adapts to it.
package schedule

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed schedule_create.md
var createToolDoc string

// CreateTool is schedule_create: an agent proposes a recurring (or one-off)
// prompt; the owner approves the exact text; the job then runs without a
// restart, with origin "chat". It always asks — no setting turns that off
// (R-GATE-4): its AskWhen gives a reason for every call, which the gate
// honours even in an autonomous conversation.
//
// It is a tools.Func of its arguments (the schema derived, the arguments
// decoded once); Bind reaches the tool inside.
type CreateTool struct {
	*tools.Func[createArgs]
	c *create
}

// create is schedule_create's typed tool, which CreateTool wraps.
type create struct {
	jobs atomic.Pointer[Adder]
	s    tools.Services // the clock and the owner's timezone
}

// Job is a chat job as schedule_create asks for it: At is zero for a
// recurring job (Cron), Cron empty for a one-off.
type Job struct {
	ID, Agent, Name, Cron, Prompt string
	At                            time.Time
	SourceConversation            string // where the agent proposed it
}

// Adder adds a job to the running scheduler. An error wrapping
// ErrNotScheduled is the job's fault (invalid, or its id is taken) and is
// told to the model; any other error is the harness's.
type Adder interface {
	Add(ctx context.Context, j Job) error
}

// ErrNotScheduled marks an Adder error that refuses the job itself.
var ErrNotScheduled = errors.New("not scheduled")

// Refused is err marked ErrNotScheduled, its text unchanged.
func Refused(err error) error { return refused{err} }

type refused struct{ err error }

func (r refused) Error() string   { return r.err.Error() }
func (r refused) Unwrap() []error { return []error{ErrNotScheduled, r.err} }

// NewCreateTool returns the tool, telling time and reading a cron in the
// owner's timezone by s; Bind gives it the running scheduler.
func NewCreateTool(s tools.Services) *CreateTool {
	c := &create{s: s}
	return &CreateTool{Func: tools.NewFunc[createArgs](c), c: c}
}

// Bind attaches the scheduler (it starts after the tool registry).
func (t *CreateTool) Bind(a Adder) { t.c.jobs.Store(&a) }

var _ tools.Tool = (*CreateTool)(nil)
var _ tools.Asker = (*CreateTool)(nil)

type createArgs struct {
	Name   string `json:"name" jsonschema:"short name, letters, digits, - and _"`
	Cron   string `json:"cron,omitempty" jsonschema:"5-field cron in the owner's time zone, e.g. \"0 7 * * 1-5\"; or leave empty and give at"`
	At     string `json:"at,omitempty" jsonschema:"RFC 3339 time for a one-off job"`
	Prompt string `json:"prompt" jsonschema:"the exact prompt the job will run"`
}

func (t *create) Def() tools.Def {
	return tools.Def{Name: "schedule_create", Description: createToolDoc, Default: true}
}

// NeedsApproval is true: it changes what runs later.
func (t *create) NeedsApproval() bool { return true }

// AskWhen always asks, showing the exact prompt to approve.
func (t *create) AskWhen(env tools.Env, a createArgs) string {
	when := a.Cron
	if when == "" {
		when = "at " + a.At
	}
	return fmt.Sprintf("schedule_create always asks: approve running this exact prompt (%s): %q", when, a.Prompt)
}

var _ tools.Checker = (*CreateTool)(nil)
var _ interface {
	Check(tools.Env, createArgs) error
	AskWhen(tools.Env, createArgs) string
} = (*create)(nil)

// Check refuses, before the owner is asked, a job the scheduler would
// refuse: no name or prompt, neither or both of cron and at, a cron that
// does not parse, an at that is not an RFC 3339 time in the future.
func (t *create) Check(env tools.Env, a createArgs) error {
	switch {
	case a.Name == "" || a.Prompt == "":
		return errors.New("Not scheduled: a job needs a name and a prompt.")
	case (a.Cron == "") == (a.At == ""):
		return errors.New("Not scheduled: give exactly one of cron (recurring) and at (one-off).")
	case a.Cron != "":
		if err := gocron.NewDefaultCron(false).IsValid(a.Cron, t.s.Loc(), t.s.Now()); err != nil {
			return fmt.Errorf("Not scheduled: cron %q is not a 5-field cron expression (%v).", a.Cron, err)
		}
	default:
		at, err := time.Parse(time.RFC3339, a.At)
		if err != nil {
			return errors.New("Not scheduled: at must be an RFC 3339 time such as 2026-12-01T07:00:00+07:00.")
		}
		if !at.After(t.s.Now()) {
			return errors.New("Not scheduled: at is in the past.")
		}
	}
	return nil
}

func (t *create) Run(ctx context.Context, env tools.Env, a createArgs) (tools.Result, error) {
	s := t.jobs.Load()
	if s == nil {
		return tools.Result{Output: "The scheduler is not running; nothing was scheduled.", IsError: true}, nil
	}
	j := Job{ID: env.AgentID + "-" + a.Name, Agent: env.AgentID, Name: a.Name, Cron: a.Cron, Prompt: a.Prompt, SourceConversation: env.Conversation}
	if a.At != "" {
		at, err := time.Parse(time.RFC3339, a.At)
		if err != nil {
			return tools.Result{Output: "at must be an RFC 3339 time such as 2026-12-01T07:00:00+07:00", IsError: true}, nil
		}
		if !at.After(t.s.Now()) {
			return tools.Result{Output: "at is in the past; nothing was scheduled.", IsError: true}, nil
		}
		j.At = at
	}
	if err := (*s).Add(ctx, j); err != nil {
		if errors.Is(err, ErrNotScheduled) {
			return tools.Result{Output: "Not scheduled: " + err.Error(), IsError: true}, nil
		}
		return tools.Result{}, err
	}
	return tools.Result{Output: fmt.Sprintf("Scheduled job %s (origin chat). The owner can see and cancel it on the jobs page.", j.ID)}, nil
}
