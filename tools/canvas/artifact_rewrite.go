package canvas

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed artifact_rewrite.md
var rewriteDescription string

// Rewrite is artifact_rewrite: a whole new version, allowed only on top of
// the latest version read whole.
type Rewrite struct{ base }

func (Rewrite) Def() tools.Def {
	return tools.Def{Name: "artifact_rewrite", Description: rewriteDescription, Default: true}
}

// refusalDiffChars bounds the diff a refused rewrite carries.
const refusalDiffChars = 20_000

// notWhole refuses a rewrite of a version the agent has not read whole;
// it carries the diff from the version it had, when it had one, and says
// whether that diff showed every change.
type notWhole struct {
	text  string
	shown int // the latest version, when the diff showed it whole
}

func (n notWhole) Error() string { return n.text }

type rewriteArgs struct {
	Artifact string  `json:"artifact" jsonschema:"The canvas id."`
	Content  *string `json:"content" jsonschema:"The whole new content."`
	Title    string  `json:"title,omitempty" jsonschema:"A new title, if it changes."`
}

func (r Rewrite) Run(ctx context.Context, env tools.Env, a rewriteArgs) (tools.Result, error) {
	if a.Content == nil {
		return tools.Failf("content is required"), nil
	}
	rec, res, err := r.get(env, a.Artifact)
	if res != nil || err != nil {
		return deref(res), err
	}
	if why := writable(env); why != "" {
		return tools.Failf("%s", why), nil
	}
	if why := writeLimit(env, rec.ID); why != "" {
		return tools.Failf("%s", why), nil
	}
	if rec.Kind == events.KindImage {
		return tools.Failf("%s is an image: artifact_import a new file instead.", rec.ID), nil
	}
	seen := env.Canvas.Seen[rec.ID]
	w, err := r.svc.Save(ctx, Write{Artifact: rec.ID, Op: events.OpRewrite, Author: env.AgentID, Conversation: env.Conversation, RunID: env.Canvas.RunID},
		func(cur events.CanvasRecord, latest string) (string, error) {
			last := cur.Latest()
			if seen == last.Version {
				return *a.Content, nil
			}
			if seen == 0 {
				return "", refusal{fmt.Sprintf("Not rewritten: you have not read %s whole in this conversation. Read version %d with artifact_read first, then rewrite it.", cur.ID, last.Version)}
			}
			old, err := r.svc.Store.Content(cur.ID, seen)
			if err != nil {
				return "", err
			}
			diff := Diff(cur.Title, seen, last.Version, old, latest)
			if len(diff) > refusalDiffChars {
				return "", refusal{fmt.Sprintf("Not rewritten: %s changed since version %d, which you read, to version %d (by %s), and the change is too long to show. Read version %d with artifact_read, then rewrite it.",
					cur.ID, seen, last.Version, last.Author, last.Version)}
			}
			return "", notWhole{text: fmt.Sprintf("Not rewritten: %s changed since version %d, which you read whole, to version %d (by %s). This is what changed; write your rewrite on top of it and call artifact_rewrite again:\n%s",
				cur.ID, seen, last.Version, last.Author, diff), shown: last.Version}
		})
	var nw notWhole
	if errors.As(err, &nw) {
		// The diff showed every change from the version it knew whole: it
		// now knows the latest one, and that version may no longer be
		// replaced by an owner's save.
		cur, _, _, serr := r.svc.Show(ctx, env.Conversation, rec.ID, nw.shown)
		if serr != nil {
			return failed(serr)
		}
		if cur.Latest().Version != nw.shown {
			return tools.Failf("Not rewritten: %s changed again while this was checked. Read it with artifact_read, then rewrite it.", rec.ID), nil
		}
		return tools.Result{Output: nw.text, IsError: true, Canvas: ref(cur, nw.shown, "", true)}, nil
	}
	if err != nil {
		return failed(err)
	}
	renamed := ""
	if a.Title != "" && a.Title != w.Record.Title {
		rn, err := r.svc.Rename(ctx, rec.ID, a.Title, env.AgentID, env.Conversation, nil)
		if err != nil {
			return failed(err)
		}
		w.Record, renamed = rn, fmt.Sprintf(" Renamed to %q.", rn.Title)
	}
	if !w.Changed {
		return tools.Result{Output: fmt.Sprintf("No change: version %d of %s already holds this content, so no version was made.%s", w.Version, rec.ID, renamed),
			Canvas: ref(w.Record, w.Version, "", true)}, nil
	}
	return tools.Result{Output: fmt.Sprintf("Rewrote %s: now version %d, %d lines.%s", rec.ID, w.Version, tools.LineCount(*a.Content), renamed),
		Canvas: ref(w.Record, w.Version, events.OpRewrite, true)}, nil
}
