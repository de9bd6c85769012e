package loop

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed image_read.md
var imageReadDescription string

// ImageReadTool describes a workspace image with one of the agent's
// vision_routes (R-LLM-3). The description model's call is a model_called
// of the step with purpose vision, so its cost counts.
const ImageReadTool = "image_read"

type imageRead struct{}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (imageRead) ReadOnly() bool { return true }

func (imageRead) Def() tools.Def {
	return tools.Def{Name: ImageReadTool, Description: strings.TrimSpace(imageReadDescription), Default: true,
		Params: imageReadParams()}
}

// imageReadParams is derived once: Def is asked for at every step, several
// times, and deriving a schema by reflection cost 7% of a tool step's CPU.
var imageReadParams = sync.OnceValue(tools.MustSchema[imageReadArgs])

// imageReadArgs are image_read's arguments; the turn answers the call, so
// the schema is derived here and the arguments decoded in answer.
type imageReadArgs struct {
	Path     string `json:"path" jsonschema:"The image, relative to the workspace."`
	Question string `json:"question,omitempty" jsonschema:"What to look for; default: describe it."`
}

func (imageRead) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Result{}, fmt.Errorf("image_read is answered by the turn")
}

// resumes: a call cut before its answer (a restart, or a pass failed on
// the store) is run again, not closed as interrupted: it only reads.
func (imageRead) traits() traits { return traits{resumes: true} }

func (imageRead) vet(t *Turn, c events.ToolCallRequest) (string, string, bool) {
	if len(t.agent.VisionRoutes) == 0 {
		return "image_read needs a model that can see: set vision_routes in this agent's agent.yaml.", "blocked", true
	}
	return "", "", false
}

func (imageRead) answer(ctx context.Context, t *Turn, c *toolCall) (tools.Result, error) {
	a, err := tools.Decode[imageReadArgs](ImageReadTool, c.Arguments)
	if err != nil {
		return tools.Failf("%s", err), nil
	}
	url, err := t.attachmentURL(a.Path)
	if err != nil {
		return tools.Failf("%s: %v", a.Path, err), nil
	}
	q := cmp.Or(strings.TrimSpace(a.Question), "Describe this image plainly and precisely, and copy out any text in it.")
	msgs := []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Text: q}, {ImageURL: url}}}}
	payer := t.payer(t.read(), c.runID, c.step)
	var errs []string
	for _, route := range t.agent.VisionRoutes {
		model, err := t.deps.Models.Model(route)
		if err != nil {
			errs = append(errs, route+": "+oneLine(err))
			continue
		}
		start := t.deps.Clock.Now()
		rep, err := model.Call(ctx, llm.Request{Messages: msgs, Route: route, Purpose: events.PurposeVision, Payer: payer,
			MaxTokens: t.spec(route).MaxOutputTokens})
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		if _, ok := errors.AsType[*budget.StoreError](err); ok {
			// The ledger could not store the call's reservation, so it
			// never left: the store failed, not the route. The pass fails
			// and the worker runs it again, this call with it (resumes).
			return tools.Result{}, err
		}
		mc := modelCalled(c.runID, c.step, route, rep, t.deps.Clock.Now().Sub(start))
		mc.Purpose, mc.ToolCalls = events.PurposeVision, nil
		if err != nil {
			mc.Error = oneLine(err)
		}
		if eerr := t.emit(ctx, mc); eerr != nil {
			return tools.Result{}, eerr
		}
		if err != nil {
			errs = append(errs, route+": "+oneLine(err))
			continue
		}
		if mc.Text != "" {
			return tools.Result{Output: fmt.Sprintf("%s (seen by %s):\n%s", a.Path, route, mc.Text)}, nil
		}
		errs = append(errs, route+": empty answer")
	}
	return tools.Failf("No vision model described %s: %s", a.Path, strings.Join(errs, "; ")), nil
}
