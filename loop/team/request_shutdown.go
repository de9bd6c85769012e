package team

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed request_shutdown.md
var requestShutdownDoc string

// requestShutdown is request_shutdown: the shutdown handshake's first
// half. The teammate finishes its current step, answers with
// shutdown_response, and its loop ends.
type requestShutdown struct{ r *Runtime }

func (requestShutdown) Def() tools.Def {
	return tools.Def{Name: "request_shutdown", Description: requestShutdownDoc}
}

type shutdownArgs struct {
	Name   string `json:"name"`
	Reason string `json:"reason,omitempty"`
}

func (q requestShutdown) Run(ctx context.Context, env tools.Env, a shutdownArgs) (tools.Result, error) {
	t, err := q.r.lead(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	id, err := q.r.request(ctx, t, events.MailShutdownRequest, a.Name, cmp.Or(a.Reason, "The lead asks you to shut down."))
	return outcome(fmt.Sprintf("Sent shutdown_request %s to %s. It finishes its current step and answers with shutdown_response; end your turn.", id, a.Name), err)
}
