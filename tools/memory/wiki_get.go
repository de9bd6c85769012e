package memory

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed wiki_get.md
var wikiGetDescription string

// wikiDir holds the shared wiki's pages beneath the home.
const wikiDir = "wiki"

// wikiGet returns a wiki page.
type wikiGet struct{}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (wikiGet) ReadOnly() bool { return true }

func (wikiGet) Def() tools.Def {
	return tools.Def{Name: "wiki_get", Description: wikiGetDescription, Default: true}
}

type wikiGetArgs struct {
	Page string `json:"page" jsonschema:"The page name, no \".md\"." schema:"pattern=^[a-z0-9][a-z0-9_-]{0,63}$"`
}

func (wikiGet) Run(ctx context.Context, env tools.Env, a wikiGetArgs) (tools.Result, error) {
	if res, ok := checkName("page", a.Page); !ok {
		return res, nil
	}
	root, err := openDir("wiki_get", env.HomeDir)
	if err != nil {
		return tools.Result{}, err
	}
	defer root.Close()
	name := wikiDir + "/" + a.Page + ".md"
	text, exists, err := readFile(root, name)
	switch {
	case err != nil:
		return tools.Result{}, fmt.Errorf("wiki_get: %s: %w", name, err)
	case !exists:
		return tools.Failf("there is no wiki page %q; wiki_search with an empty query lists the pages", a.Page), nil
	case text == "":
		return tools.Result{Output: name + " is empty"}, nil
	}
	return tools.Result{Output: text}, nil
}
