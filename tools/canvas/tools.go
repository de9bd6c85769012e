// Package canvas holds the canvas rules (R-CAN, seed 000 §2.8) — kinds and
// caps, the 120-second merge rule, reach, per-turn limits — in Service,
// which the seven artifact_* tools and the REST API share, and the canvas
// notes a turn-opening message carries (R-CTX-3, Notes).
package canvas

import (
	"errors"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

// Per-turn limits: past them a write says nothing was written and to
// tell the owner.
const (
	MaxCreatesPerTurn = 30
	MaxWritesPerTurn  = 30
)

// Tools returns the seven canvas tools over svc (nil: they answer that
// canvases are not available).
func Tools(svc *Service, s tools.Services) []tools.Tool {
	b := base{svc, s}
	return []tools.Tool{tools.NewFunc[createArgs](Create{b}), tools.NewFunc[listArgs](List{b}), tools.NewFunc[readArgs](Read{b}),
		tools.NewFunc[editArgs](Edit{b}), tools.NewFunc[rewriteArgs](Rewrite{b}), tools.NewFunc[importArgs](Import{b}),
		tools.NewFunc[exportArgs](Export{b})}
}

// Compile-time checks of the gate hooks (Func finds them by these shapes).
var (
	_ tools.Gated = Export{}
	_ interface {
		Check(tools.Env, exportArgs) error
	} = Export{}
)

// base is what every canvas tool holds: the canvas service, and the
// services it writes, proposes and tells the time with.
type base struct {
	svc *Service
	s   tools.Services
}

// unreachable is the one answer for a canvas that does not exist and one
// the agent cannot reach, so neither tells the other apart.
func unreachable(id string) tools.Result {
	return tools.Failf("No canvas %q that you can reach. artifact_list shows the canvases you can.", id)
}

// reaches applies the reach rules: the master reaches every canvas;
// another agent those linked to its conversation or to the root
// conversation of its delegation chain, and those it created.
func (b base) reaches(env tools.Env, rec events.CanvasRecord) bool {
	switch {
	case b.svc.Master != "" && env.AgentID == b.svc.Master:
		return true
	case rec.Linked(env.Conversation), env.Canvas.RootID != "" && rec.Linked(env.Canvas.RootID):
		return true
	}
	return rec.Author == env.AgentID
}

// get finds a canvas the agent reaches; res is the answer otherwise.
func (b base) get(env tools.Env, id string) (events.CanvasRecord, *tools.Result, error) {
	rec, err := b.svc.Get(id)
	if errors.Is(err, ErrNotFound) || err == nil && !b.reaches(env, rec) {
		res := unreachable(id)
		return rec, &res, nil
	}
	if errors.Is(err, ErrUnavailable) {
		res := tools.Failf("Canvases are not available in this process.")
		return rec, &res, nil
	}
	return rec, nil, err
}

// writable says why this turn cannot write canvases, "" when it can.
func writable(env tools.Env) string {
	if env.Canvas.Channel == "api" {
		return "Nothing was written: this turn came through the API channel, where nobody has a canvas panel open, so canvases are read-only here. Tell the owner to ask from the web chat, Telegram or a job."
	}
	return ""
}

// writeLimit says why this turn may not write canvas id again.
func writeLimit(env tools.Env, id string) string {
	if env.Canvas.Writes[id] >= MaxWritesPerTurn {
		return fmt.Sprintf("Nothing was written: this turn has already written canvas %s %d times, the most one turn may. Tell the owner what is left to do.", id, MaxWritesPerTurn)
	}
	return ""
}

// failed turns a rule's refusal into the model's answer; a harness
// failure stays an error.
func failed(err error) (tools.Result, error) {
	var stale *StaleError
	var own refusal
	switch {
	case errors.As(err, &own):
		return tools.Failf("%s", own.text), nil
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrStoreFull), errors.Is(err, ErrBadKind), errors.Is(err, ErrBadRequest):
		return tools.Failf("%s", err.Error()), nil
	case errors.As(err, &stale):
		return tools.Failf("%s", err.Error()), nil
	case errors.Is(err, ErrUnavailable):
		return tools.Failf("Canvases are not available in this process."), nil
	}
	return tools.Result{}, err
}

// ref is the canvas reference a result carries.
func ref(rec events.CanvasRecord, version int, op string, whole bool) *events.CanvasRef {
	return &events.CanvasRef{Artifact: rec.ID, Title: rec.Title, Kind: rec.Kind, Version: version, Op: op, Whole: whole}
}

// knewPrevious: the agent knew the version before its write whole, so it
// knows the one it wrote.
func knewPrevious(env tools.Env, rec events.CanvasRecord, written int) bool {
	return env.Canvas.Seen[rec.ID] == written-1
}

// refusal is a tool's own refusal from inside a Prepare: the text is the
// model's answer.
type refusal struct{ text string }

func (r refusal) Error() string { return r.text }
