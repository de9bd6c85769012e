package memory

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed wiki_search.md
var wikiSearchDescription string

// wikiSearch ranks the passages of the wiki's pages, or lists the pages.
type wikiSearch struct{ rank Ranker }

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (wikiSearch) ReadOnly() bool { return true }

func (wikiSearch) Def() tools.Def {
	return tools.Def{Name: "wiki_search", Description: wikiSearchDescription, Default: true}
}

type wikiSearchArgs struct {
	Query string `json:"query" jsonschema:"A few words of what you are looking for; empty lists every page."`
}

func (w wikiSearch) Run(ctx context.Context, env tools.Env, a wikiSearchArgs) (tools.Result, error) {
	root, err := openDir("wiki_search", env.HomeDir)
	if err != nil {
		return tools.Result{}, err
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), wikiDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return tools.Result{}, fmt.Errorf("wiki_search: %w", err)
	}
	query := strings.TrimSpace(a.Query)
	var list []string
	var ps []Passage
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
		list = append(list, page+" — "+title)
		ps = append(ps, passages(name, page+" — "+title, text)...)
	}
	switch {
	case query == "" && len(list) == 0:
		return tools.Result{Output: "the wiki has no pages yet; create one with wiki_apply"}, nil
	case query == "":
		return tools.Result{Output: strings.Join(list, "\n")}, nil
	}
	out, n, err := rankResult(ctx, "wiki_search", w.rank, query, ps)
	if err != nil {
		return tools.Result{}, err
	}
	if n == 0 {
		return tools.Result{Output: fmt.Sprintf("no wiki page matches %q", a.Query)}, nil
	}
	return tools.Result{Output: out}, nil
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
