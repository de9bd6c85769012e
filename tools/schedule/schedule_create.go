// Package schedule holds schedule_create, the tool an agent proposes a job
// with. The scheduler itself is a gateway (gateways/scheduler); the tool
// reaches it only through Adder, which cmd/crew adapts to it.
package schedule

import (
	"context"
	_ "embed"
	"encoding/json"
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
type CreateTool struct {
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
	return &CreateTool{s: s}
}

// Bind attaches the scheduler (it starts after the tool registry).
func (t *CreateTool) Bind(a Adder) { t.jobs.Store(&a) }

var _ tools.Tool = (*CreateTool)(nil)
var _ tools.Asker = (*CreateTool)(nil)

type createArgs struct {
	Name   string `json:"name"`
	Cron   string `json:"cron"`
	At     string `json:"at"`
	Prompt string `json:"prompt"`
}

func (t *CreateTool) Def() tools.Def {
	return tools.Def{Name: "schedule_create", Description: createToolDoc, Default: true, Params: json.RawMessage(`{
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "short name, letters, digits, - and _"},
    "cron": {"type": "string", "description": "5-field cron in the owner's time zone, e.g. \"0 7 * * 1-5\"; or leave empty and give at"},
    "at": {"type": "string", "description": "RFC 3339 time for a one-off job"},
    "prompt": {"type": "string", "description": "the exact prompt the job will run"}
  },
  "required": ["name", "prompt"],
  "additionalProperties": false
}`)}
}

// NeedsApproval is true: it changes what runs later.
func (t *CreateTool) NeedsApproval() bool { return true }

// AskWhen always asks, showing the exact prompt to approve.
func (t *CreateTool) AskWhen(env tools.Env, args json.RawMessage) string {
	var a createArgs
	json.Unmarshal(args, &a)
	when := a.Cron
	if when == "" {
		when = "at " + a.At
	}
	return fmt.Sprintf("schedule_create always asks: approve running this exact prompt (%s): %q", when, a.Prompt)
}

var _ tools.Checker = (*CreateTool)(nil)

// Check refuses, before the owner is asked, a job the scheduler would
// refuse: no name or prompt, neither or both of cron and at, a cron that
// does not parse, an at that is not an RFC 3339 time in the future.
func (t *CreateTool) Check(env tools.Env, args json.RawMessage) error {
	var a createArgs
	if msg, ok := tools.DecodeArgs(t.Def().Name, args, &a); !ok {
		return errors.New(msg)
	}
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

func (t *CreateTool) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	s := t.jobs.Load()
	if s == nil {
		return tools.Result{Output: "The scheduler is not running; nothing was scheduled.", IsError: true}, nil
	}
	var a createArgs
	if msg, ok := tools.DecodeArgs(t.Def().Name, args, &a); !ok {
		return tools.Failf("%s", msg), nil
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
