package memory

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed memory_search.md
var memorySearchDescription string

// memorySearch ranks the passages of MEMORY.md and the daily notes.
type memorySearch struct {
	rank  Ranker
	files *files
}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (memorySearch) ReadOnly() bool { return true }

func (memorySearch) Def() tools.Def {
	return tools.Def{Name: "memory_search", Description: memorySearchDescription, Default: true}
}

type memorySearchArgs struct {
	Query string `json:"query" jsonschema:"A few words of what you are looking for."`
	Days  int    `json:"days,omitempty" jsonschema:"Only daily notes of the last this many days, today included. Default: all." schema:"minimum=1"`
}

func (m memorySearch) Run(ctx context.Context, env tools.Env, a memorySearchArgs) (tools.Result, error) {
	switch {
	case strings.TrimSpace(a.Query) == "":
		return tools.Failf("query is required"), nil
	case a.Days < 0:
		return tools.Failf("days must be 1 or more, or left out for all notes"), nil
	}
	root, err := openDir("memory_search", env.AgentDir)
	if err != nil {
		return tools.Result{}, err
	}
	defer root.Close()

	files, err := noteFiles(root, m.files.now(), a.Days)
	if err != nil {
		return tools.Result{}, fmt.Errorf("memory_search: %w", err)
	}
	var ps []Passage
	for _, f := range append([]string{"MEMORY.md"}, files...) {
		text, _, err := readFile(root, f)
		if err != nil {
			return tools.Result{}, fmt.Errorf("memory_search: %s: %w", f, err)
		}
		ps = append(ps, passages(f, "", text)...)
	}
	out, n, err := rankResult(ctx, "memory_search", m.rank, a.Query, ps)
	if err != nil {
		return tools.Result{}, err
	}
	if n == 0 {
		return tools.Result{Output: fmt.Sprintf("no matches for %q in MEMORY.md or memory/", a.Query)}, nil
	}
	return tools.Result{Output: out}, nil
}

// noteFiles lists memory/*.md newest first; with days > 0 only the daily
// notes of the last days days up to today.
func noteFiles(root *os.Root, today time.Time, days int) ([]string, error) {
	entries, err := fs.ReadDir(root.FS(), "memory")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	y, m, d := today.Date()
	oldest := time.Date(y, m, d-days+1, 0, 0, 0, 0, today.Location()).Format("2006-01-02") + ".md"
	var files []string
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(n, ".md") { // a symlink may lead out of the folder
			continue
		}
		if days > 0 && !(isNoteName(n) && n >= oldest) {
			continue
		}
		files = append(files, "memory/"+n)
	}
	slices.Sort(files)
	slices.Reverse(files)
	return files, nil
}

// isNoteName reports whether n is a daily note's name, YYYY-MM-DD.md.
func isNoteName(n string) bool {
	_, err := time.Parse("2006-01-02.md", n)
	return err == nil
}
