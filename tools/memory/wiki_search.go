package memory

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed wiki_search.md
var wikiSearchDescription string

// wikiSearch finds wiki pages by name, title and lines.
type wikiSearch struct{}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (wikiSearch) ReadOnly() bool { return true }

func (wikiSearch) Def() tools.Def {
	return tools.Def{Name: "wiki_search", Description: wikiSearchDescription, Default: true, Params: schema(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "Text to find, case-insensitive; empty lists every page."}
  },
  "required": ["query"],
  "additionalProperties": false
}`)}
}

func (wikiSearch) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	var a struct {
		Query string `json:"query"`
	}
	if res, ok := decode("wiki_search", args, &a); !ok {
		return res, nil
	}
	root, err := openDir("wiki_search", env.HomeDir)
	if err != nil {
		return tools.Result{}, err
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), wikiDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return tools.Result{}, fmt.Errorf("wiki_search: %w", err)
	}
	query := strings.ToLower(strings.TrimSpace(a.Query))
	var out []string
	lines := 0
	for _, e := range entries { // ReadDir sorts by name
		page, ok := strings.CutSuffix(e.Name(), ".md")
		if !e.Type().IsRegular() || !ok || !nameRE.MatchString(page) { // a symlink may lead out of the home
			continue
		}
		name := wikiDir + "/" + e.Name()
		text, _, err := readFile(root, name)
		if err != nil {
			return tools.Result{}, fmt.Errorf("wiki_search: %s: %w", name, err)
		}
		title := pageTitle(page, text)
		var matches []string
		cut := false
		if query != "" {
			matches, cut = matchLines(nil, "  ", text, query)
			if len(matches) == 0 && !strings.Contains(strings.ToLower(page+" "+title), query) {
				continue
			}
		}
		if room := maxMatches - lines; len(matches) > room {
			matches, cut = matches[:room], true
		}
		if len(matches) > 0 || !cut {
			lines += len(matches)
			out = append(out, page+" — "+title)
			out = append(out, matches...)
		}
		if cut {
			out = append(out, fmt.Sprintf("… cut at %d matching lines; narrow the query", maxMatches))
			break
		}
	}
	if len(out) == 0 {
		if query == "" {
			return tools.Result{Output: "the wiki has no pages yet; create one with wiki_apply"}, nil
		}
		return tools.Result{Output: fmt.Sprintf("no wiki page matches %q", a.Query)}, nil
	}
	return tools.Result{Output: strings.Join(out, "\n")}, nil
}

// pageTitle is a page's first "# " heading, or its name.
func pageTitle(page, text string) string {
	for l := range strings.Lines(text) {
		if t, ok := strings.CutPrefix(l, "# "); ok {
			return strings.TrimSpace(t)
		}
	}
	return page
}
