package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/schedule"
)

type adder struct {
	err error
	got []schedule.Job
}

func (a *adder) Add(_ context.Context, j schedule.Job) error {
	a.got = append(a.got, j)
	return a.err
}

var _ schedule.Adder = (*adder)(nil)

// TestScheduleCreateTellsRefusalsAsData: a job the scheduler refuses is a
// failure the model reads; a broken scheduler is a Go error; an unbound
// tool schedules nothing.
func TestScheduleCreateTellsRefusalsAsData(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	env := tools.Env{AgentID: "pong", Conversation: "c1"}
	args := json.RawMessage(`{"name":"walk","cron":"0 7 * * *","prompt":"go for a walk"}`)

	tool := schedule.NewCreateTool(tools.Services{Clock: func() time.Time { return now }})
	res, err := tool.Run(t.Context(), env, args)
	if err != nil || !res.IsError || !strings.Contains(res.Output, "not running") {
		t.Errorf("unbound: %+v, %v; want the model told the scheduler is not running", res, err)
	}

	a := &adder{}
	tool.Bind(a)
	res, err = tool.Run(t.Context(), env, args)
	if err != nil || res.IsError {
		t.Fatalf("scheduled: %+v, %v", res, err)
	}
	want := schedule.Job{ID: "pong-walk", Agent: "pong", Name: "walk", Cron: "0 7 * * *", Prompt: "go for a walk", SourceConversation: "c1"}
	if len(a.got) != 1 || a.got[0] != want {
		t.Errorf("added %+v, want %+v", a.got, want)
	}

	a.err = schedule.Refused(errors.New("scheduler: job id already used: pong-walk"))
	res, err = tool.Run(t.Context(), env, args)
	if err != nil || !res.IsError || res.Output != "Not scheduled: scheduler: job id already used: pong-walk" {
		t.Errorf("refused: %+v, %v; want the refusal as data", res, err)
	}

	a.err = errors.New("store down")
	if _, err := tool.Run(t.Context(), env, args); err == nil || err.Error() != "store down" {
		t.Errorf("broken scheduler: err %v, want the harness error", err)
	}

	past := json.RawMessage(`{"name":"once","at":"2026-11-30T07:00:00Z","prompt":"x"}`)
	if res, _ := tool.Run(t.Context(), env, past); !res.IsError || !strings.Contains(res.Output, "in the past") {
		t.Errorf("past at: %+v", res)
	}
}

// Issue 26: a job the scheduler would refuse — a cron that does not parse,
// neither or both of cron and at, an at in the past or not RFC 3339 — is
// refused by Check, so the owner is never asked to approve it.
func TestScheduleCreateRefusesBadJobsBeforeAsking(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tool := schedule.NewCreateTool(tools.Services{Clock: func() time.Time { return now }})
	cases := []struct{ args, want string }{
		{`{"name":"n","prompt":"p","cron":"0 7 * * 1-5"}`, ""},
		{`{"name":"n","prompt":"p","at":"2026-12-02T07:00:00Z"}`, ""},
		{`{"name":"n","prompt":"p","cron":"not a cron"}`, "not a 5-field cron"},
		{`{"name":"n","prompt":"p"}`, "exactly one of cron"},
		{`{"name":"n","prompt":"p","cron":"0 7 * * *","at":"2026-12-02T07:00:00Z"}`, "exactly one of cron"},
		{`{"name":"n","prompt":"p","at":"tomorrow"}`, "RFC 3339"},
		{`{"name":"n","prompt":"p","at":"2026-11-30T07:00:00Z"}`, "in the past"},
		{`{"name":"n","cron":"0 7 * * *"}`, "name and a prompt"},
	}
	for _, c := range cases {
		err := tools.Check(tool, tools.Env{}, json.RawMessage(c.args))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want it to say %q", c.args, err, c.want)
		}
	}
}
