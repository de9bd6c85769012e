package canvas

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed artifact_edit.md
var editDescription string

// Edit is artifact_edit: replace exact text in a canvas's latest version.
type Edit struct{ base }

func (Edit) Def() tools.Def {
	return tools.Def{Name: "artifact_edit", Description: editDescription, Default: true}
}

type editArgs struct {
	Artifact   string  `json:"artifact" jsonschema:"The canvas id."`
	Old        *string `json:"old,omitempty" jsonschema:"Exact text of the latest version to replace."`
	New        *string `json:"new,omitempty" jsonschema:"What replaces it."`
	ReplaceAll bool    `json:"replace_all,omitempty" jsonschema:"Replace every occurrence; otherwise old must occur exactly once."`
	Title      string  `json:"title,omitempty" jsonschema:"A new title (alone, only renames)."`
}

func (e Edit) Run(ctx context.Context, env tools.Env, a editArgs) (tools.Result, error) {
	if (a.Old == nil) != (a.New == nil) || a.Old == nil && a.Title == "" {
		return tools.Failf("give old and new (and optionally title), or title alone to rename"), nil
	}
	if a.Old != nil && *a.Old == "" {
		return tools.Failf("old must not be empty: quote the exact text to replace"), nil
	}
	rec, res, err := e.get(env, a.Artifact)
	if res != nil || err != nil {
		return deref(res), err
	}
	if why := writable(env); why != "" {
		return tools.Failf("%s", why), nil
	}
	if why := writeLimit(env, rec.ID); why != "" {
		return tools.Failf("%s", why), nil
	}
	if rec.Kind == events.KindImage && a.Old != nil {
		return tools.Failf("%s is an image: it cannot be edited as text (artifact_import a new file instead).", rec.ID), nil
	}
	renamed := ""
	if a.Title != "" && a.Title != rec.Title {
		if rec, err = e.svc.Rename(ctx, rec.ID, a.Title, env.AgentID, env.Conversation, nil); err != nil {
			return failed(err)
		}
		renamed = fmt.Sprintf("Renamed to %q. ", rec.Title)
	}
	if a.Old == nil {
		return tools.Result{Output: strings.TrimSpace(renamed), Canvas: ref(rec, rec.Latest().Version, events.OpEdit, env.Canvas.Seen[rec.ID] == rec.Latest().Version)}, nil
	}
	var replaced int
	w, err := e.svc.Save(ctx, Write{Artifact: rec.ID, Op: events.OpEdit, Author: env.AgentID, Conversation: env.Conversation, RunID: env.Canvas.RunID},
		func(cur events.CanvasRecord, latest string) (string, error) {
			replaced = strings.Count(latest, *a.Old)
			switch {
			case replaced == 0:
				return "", refusal{fmt.Sprintf("Nothing was written: the text to replace is not in version %d of %s. Read it again (artifact_read) and quote it exactly.", cur.Latest().Version, cur.ID)}
			case replaced > 1 && !a.ReplaceAll:
				return "", refusal{fmt.Sprintf("Nothing was written: the text to replace occurs %d times in version %d of %s; quote more of it to make it unique, or set replace_all.", replaced, cur.Latest().Version, cur.ID)}
			case a.ReplaceAll:
				return strings.ReplaceAll(latest, *a.Old, *a.New), nil
			}
			return strings.Replace(latest, *a.Old, *a.New, 1), nil
		})
	if err != nil {
		return failed(err)
	}
	if !w.Changed {
		return tools.Result{Output: renamed + fmt.Sprintf("No change: the edit leaves version %d of %s as it was, so no version was made.", w.Version, rec.ID),
			Canvas: ref(w.Record, w.Version, "", env.Canvas.Seen[rec.ID] == w.Version)}, nil
	}
	return tools.Result{Output: renamed + fmt.Sprintf("Edited %s: %d replacement(s), now version %d.", rec.ID, replaced, w.Version),
		Canvas: ref(w.Record, w.Version, events.OpEdit, knewPrevious(env, w.Record, w.Version))}, nil
}
