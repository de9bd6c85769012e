package schedule

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed list_crons.md
var listToolDoc string

//go:embed cancel_cron.md
var cancelToolDoc string

// Cron is one job as list_crons shows it and cancel_cron finds it.
type Cron struct {
	ID, Agent, Name string
	Origin          string // profile (a schedule of agent.yaml) or chat (schedule_create)
	When            string // the cron, or "once at <time>"
	What            string // the prompt, /command or script
	Enabled         bool   // a schedule not written enabled: false; a chat job not cancelled
	Status          string
	NextRun         string
	LastRun         string
	LastStatus      string
	RetryAt         string
}

// Crons is what list_crons and cancel_cron reach: every job of the crew
// (the tools keep the calling agent's own), cancelling a chat job, and
// writing enabled: false into a schedule of agent.yaml.
type Crons interface {
	List(ctx context.Context) ([]Cron, error)
	Cancel(ctx context.Context, id, reason string) error
	Disable(ctx context.Context, id string) error
}

// CronTools are list_crons and cancel_cron over one Crons, bound when the
// scheduler starts (after the tool registry).
type CronTools struct{ jobs atomic.Pointer[Crons] }

// Bind attaches the crew's jobs.
func (c *CronTools) Bind(j Crons) { c.jobs.Store(&j) }

// Tools are list_crons and cancel_cron.
func (c *CronTools) Tools() []tools.Tool {
	return []tools.Tool{tools.NewFunc[noArgs](listCrons{c}), tools.NewFunc[cancelArgs](cancelCron{c})}
}

// noArgs are the arguments of a tool that takes none.
type noArgs struct{}

// own is the agent's jobs, or an error the model reads.
func (c *CronTools) own(ctx context.Context, agent string) ([]Cron, string) {
	var j *Crons
	if c != nil {
		j = c.jobs.Load()
	}
	if j == nil {
		return nil, "The scheduler is not running here; no jobs can be read."
	}
	all, err := (*j).List(ctx)
	if err != nil {
		return nil, "The jobs could not be read: " + err.Error()
	}
	var out []Cron
	for _, cr := range all {
		if cr.Agent == agent {
			out = append(out, cr)
		}
	}
	return out, ""
}

type listCrons struct{ c *CronTools }

var _ tools.Reader = listCrons{}

func (listCrons) Def() tools.Def {
	return tools.Def{Name: "list_crons", Description: listToolDoc, Default: true}
}

func (listCrons) ReadOnly() bool { return true }

func (l listCrons) Run(ctx context.Context, env tools.Env, _ noArgs) (tools.Result, error) {
	own, fail := l.c.own(ctx, env.AgentID)
	if fail != "" {
		return tools.Result{Output: fail, IsError: true}, nil
	}
	if len(own) == 0 {
		return tools.Result{Output: "No jobs of agent " + env.AgentID + ". schedule_create proposes one."}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Jobs of agent %s (%d):\n", env.AgentID, len(own))
	for _, cr := range own {
		state := "enabled"
		if !cr.Enabled {
			state = "disabled"
			if cr.Origin == "chat" {
				state = "cancelled"
			}
		}
		fmt.Fprintf(&b, "\n- id %s (%s, %s): %s — %s\n  status %s", cr.ID, originWords(cr.Origin), state, cr.When, cr.What, cr.Status)
		if cr.NextRun != "" {
			b.WriteString("; next run " + cr.NextRun)
		}
		if cr.LastRun != "" {
			b.WriteString("; last run " + cr.LastRun + " " + cr.LastStatus)
		}
		if cr.RetryAt != "" {
			b.WriteString("; failed, retrying at " + cr.RetryAt)
		}
	}
	b.WriteString("\n\ncancel_cron {\"id\": …} cancels one: a job you created with schedule_create at once, a schedule of agent.yaml after the owner approves.")
	return tools.Result{Output: b.String()}, nil
}

func originWords(origin string) string {
	if origin == "chat" {
		return "created with schedule_create"
	}
	return "agent.yaml schedule"
}

type cancelCron struct{ c *CronTools }

var _ interface {
	AskWhen(tools.Env, cancelArgs) string
} = cancelCron{}

type cancelArgs struct {
	ID string `json:"id" jsonschema:"the job's id, as list_crons shows it"`
}

func (cancelCron) Def() tools.Def {
	return tools.Def{Name: "cancel_cron", Description: cancelToolDoc, Default: true}
}

// find is the agent's job id.
func (c cancelCron) find(ctx context.Context, env tools.Env, a cancelArgs) (Cron, bool, string) {
	own, fail := c.c.own(ctx, env.AgentID)
	if fail != "" {
		return Cron{}, false, fail
	}
	for _, cr := range own {
		if cr.ID == a.ID {
			return cr, true, ""
		}
	}
	return Cron{}, false, fmt.Sprintf("Agent %s has no job %q; list_crons shows its jobs (another agent's cannot be cancelled from here).", env.AgentID, a.ID)
}

// AskWhen: a job the agent created with schedule_create is its own to
// cancel; a schedule of agent.yaml is the owner's, so cancelling it asks.
func (c cancelCron) AskWhen(env tools.Env, a cancelArgs) string {
	if a.ID == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cr, ok, _ := c.find(ctx, env, a)
	if !ok || cr.Origin == "chat" || !cr.Enabled {
		return ""
	}
	return fmt.Sprintf("cancel_cron of a schedule in agent.yaml asks: approve writing enabled: false into agent %s's schedule %q (%s): %s", cr.Agent, cr.Name, cr.When, cr.What)
}

func (c cancelCron) Run(ctx context.Context, env tools.Env, a cancelArgs) (tools.Result, error) {
	cr, ok, fail := c.find(ctx, env, a)
	if !ok {
		return tools.Result{Output: fail, IsError: true}, nil
	}
	if !cr.Enabled {
		return tools.Result{Output: fmt.Sprintf("Job %s is already %s; nothing changed.", cr.ID, map[bool]string{true: "cancelled", false: "disabled"}[cr.Origin == "chat"])}, nil
	}
	j := c.c.jobs.Load()
	if cr.Origin == "chat" {
		if err := (*j).Cancel(ctx, cr.ID, "cancel_cron by "+env.AgentID+" in "+env.Conversation); err != nil {
			return tools.Result{Output: "Not cancelled: " + err.Error(), IsError: true}, nil
		}
		return tools.Result{Output: fmt.Sprintf("Cancelled job %s; it will not run again (a run already going ends on its own).", cr.ID)}, nil
	}
	if err := (*j).Disable(ctx, cr.ID); err != nil {
		return tools.Result{Output: "Not cancelled: " + err.Error(), IsError: true}, nil
	}
	return tools.Result{Output: fmt.Sprintf("Schedule %s is off: enabled: false is written into agent %s's agent.yaml (the owner can turn it on again on the jobs page).", cr.Name, cr.Agent)}, nil
}
