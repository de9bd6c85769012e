package canvas

import (
	"context"
	_ "embed"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed artifact_read.md
var readDescription string

// Read is artifact_read: a canvas version, paged by lines.
type Read struct{ base }

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (Read) ReadOnly() bool { return true }

func (Read) Def() tools.Def {
	return tools.Def{Name: "artifact_read", Description: readDescription, Default: true, Uncut: true}
}

// pageChars bounds one answer's text.
const pageChars = 60_000

type readArgs struct {
	Artifact string `json:"artifact" jsonschema:"The canvas id."`
	Version  int    `json:"version,omitempty" jsonschema:"A version; default the latest." schema:"minimum=1"`
	FromLine int    `json:"from_line,omitempty" jsonschema:"First line to return; default 1." schema:"minimum=1"`
	Lines    int    `json:"lines,omitempty" jsonschema:"How many lines; default all that fit in one answer." schema:"minimum=1"`
}

func (r Read) Run(ctx context.Context, env tools.Env, a readArgs) (tools.Result, error) {
	if a.Version < 0 || a.FromLine < 0 || a.Lines < 0 {
		return tools.Failf("version, from_line and lines are positive"), nil
	}
	rec, res, err := r.get(env, a.Artifact)
	if res != nil || err != nil {
		return deref(res), err
	}
	if a.Version > rec.Latest().Version {
		return tools.Failf("%s has versions 1 to %d.", rec.ID, rec.Latest().Version), nil
	}
	rec, v, text, err := r.svc.Show(ctx, env.Conversation, rec.ID, a.Version)
	if err != nil {
		return failed(err)
	}
	latest := v.Version == rec.Latest().Version
	head := fmt.Sprintf("Canvas %q (id %s, %s), version %d of %d, by %s, %s", rec.Title, rec.ID, kindName(rec), v.Version, rec.Latest().Version, v.Author, v.Time.In(r.s.Loc()).Format("2006-01-02 15:04"))
	if v.Note != "" {
		head += " — " + v.Note
	}
	if rec.Kind == events.KindImage {
		data, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return tools.Result{}, fmt.Errorf("canvas %s v%d: stored image: %w", rec.ID, v.Version, err)
		}
		return tools.Result{Output: head + fmt.Sprintf("\nAn image (%s, %d bytes), attached.", rec.MIME, len(data)),
			Parts: []tools.Part{tools.ImagePart(rec.MIME, data)}, Canvas: ref(rec, v.Version, "", true)}, nil
	}
	all := lines(text)
	from := max(a.FromLine, 1)
	if from > len(all) && !(from == 1 && len(all) == 0) {
		return tools.Failf("%s version %d has %d lines.", rec.ID, v.Version, len(all)), nil
	}
	var b strings.Builder
	b.WriteString(head + "\n")
	end := from - 1
	for i := from - 1; i < len(all); i++ {
		if a.Lines > 0 && i-from+1 >= a.Lines {
			break
		}
		line := fmt.Sprintf("%6d\t%s\n", i+1, all[i])
		if b.Len()+len(line) > pageChars && i > from-1 {
			break
		}
		b.WriteString(line)
		end = i + 1
	}
	whole := from == 1 && end == len(all)
	switch {
	case len(all) == 0:
		b.WriteString("(empty)\n")
	case whole:
		fmt.Fprintf(&b, "(all %d lines)\n", len(all))
	default:
		fmt.Fprintf(&b, "(lines %d-%d of %d", from, end, len(all))
		if end < len(all) {
			fmt.Fprintf(&b, "; continue with from_line %d", end+1)
		}
		b.WriteString(")\n")
	}
	if !latest {
		fmt.Fprintf(&b, "This is not the latest version (%d).\n", rec.Latest().Version)
	}
	return tools.Result{Output: strings.TrimRight(b.String(), "\n"), Canvas: ref(rec, v.Version, "", whole)}, nil
}

func kindName(rec events.CanvasRecord) string {
	if rec.Language != "" {
		return rec.Kind + " " + rec.Language
	}
	return rec.Kind
}

func deref(r *tools.Result) tools.Result {
	if r == nil {
		return tools.Result{}
	}
	return *r
}
