package canvas

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed artifact_list.md
var listDescription string

// List is artifact_list: the canvases the agent reaches, newest first.
type List struct{ base }

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (List) ReadOnly() bool { return true }

func (List) Def() tools.Def {
	return tools.Def{Name: "artifact_list", Description: listDescription, Default: true}
}

// maxListed bounds the lines of one answer.
const maxListed = 100

type listArgs struct {
	Query string `json:"query,omitempty" jsonschema:"Keep canvases whose title contains this (any case)."`
}

func (l List) Run(ctx context.Context, env tools.Env, a listArgs) (tools.Result, error) {
	if err := l.svc.ready(); err != nil {
		return failed(err)
	}
	all, err := l.svc.Store.List(a.Query)
	if err != nil {
		return tools.Result{}, err
	}
	var b strings.Builder
	n := 0
	for _, rec := range all {
		if !l.reaches(env, rec) {
			continue
		}
		n++
		if n > maxListed {
			continue
		}
		last := rec.Latest()
		kind := rec.Kind
		if rec.Language != "" {
			kind += " " + rec.Language
		}
		fmt.Fprintf(&b, "- %s %q (%s) v%d, %s by %s", rec.ID, rec.Title, kind, last.Version, rec.Updated.In(l.s.Loc()).Format("2006-01-02 15:04"), last.Author)
		switch seen := env.Canvas.Seen[rec.ID]; {
		case seen == 0:
			b.WriteString(" — not read in this conversation")
		case seen < last.Version:
			fmt.Fprintf(&b, " — new to you: v%d after v%d, which you read", last.Version, seen)
		}
		b.WriteString("\n")
	}
	switch {
	case n == 0 && a.Query != "":
		return tools.Result{Output: fmt.Sprintf("No canvas you can reach has %q in its title.", a.Query)}, nil
	case n == 0:
		return tools.Result{Output: "No canvases you can reach yet. artifact_create makes one."}, nil
	case n > maxListed:
		fmt.Fprintf(&b, "(%d more; narrow with query)\n", n-maxListed)
	}
	return tools.Result{Output: strings.TrimRight(b.String(), "\n")}, nil
}
