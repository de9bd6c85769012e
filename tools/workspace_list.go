package tools

import (
	"context"
	_ "embed"
	"fmt"
	"io/fs"
	"strings"
)

//go:embed workspace_list.md
var workspaceListDescription string

const maxListEntries = 1000

// WorkspaceList lists one directory of the workspace.
type WorkspaceList struct{}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (WorkspaceList) ReadOnly() bool { return true }

func (WorkspaceList) Def() Def {
	return Def{Name: "workspace_list", Description: workspaceListDescription, Default: true}
}

type workspaceListArgs struct {
	Path string `json:"path,omitempty" jsonschema:"Directory relative to the workspace; empty for the workspace itself."`
}

func (WorkspaceList) Run(ctx context.Context, env Env, a workspaceListArgs) (Result, error) {
	pl, res, err := openPath(env, a.Path)
	if res != nil || err != nil {
		return deref(res), err
	}
	defer pl.root.Close()
	show := displayPath(pl.rel)

	fi, err := pl.root.Stat(pl.rel)
	if err != nil {
		return Failf("%s", describePathErr(show, err)), nil
	}
	if !fi.IsDir() {
		return Failf("%s is a file, not a directory; use workspace_read", show), nil
	}
	entries, err := fs.ReadDir(pl.root.FS(), pl.rel)
	if err != nil {
		return Failf("%s", describePathErr(show, err)), nil
	}
	if len(entries) == 0 {
		return Result{Output: show + " is empty"}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d entries; directories end in /, symlinks in @)\n", show, len(entries))
	for i, e := range entries {
		if i == maxListEntries {
			fmt.Fprintf(&b, "[… %d more entries not shown; use workspace_glob to narrow]\n", len(entries)-i)
			break
		}
		switch t := e.Type(); {
		case t.IsDir():
			b.WriteString(e.Name() + "/\n")
		case t&fs.ModeSymlink != 0:
			b.WriteString(e.Name() + "@\n")
		case t.IsRegular():
			if info, err := e.Info(); err == nil {
				b.WriteString(e.Name() + "\t" + sizeText(info) + "\n")
			} else {
				b.WriteString(e.Name() + "\n")
			}
		default:
			b.WriteString(e.Name() + "\t(special file)\n")
		}
	}
	return Result{Output: strings.TrimSuffix(b.String(), "\n")}, nil
}

// displayPath names a workspace-relative path for the model.
func displayPath(rel string) string {
	if rel == "." || rel == "" {
		return "the workspace"
	}
	return rel
}

func deref(r *Result) Result {
	if r == nil {
		return Result{}
	}
	return *r
}
