package memory

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed wiki_apply.md
var wikiApplyDescription string

// wikiApply creates, overwrites, appends to or edits a wiki page.
type wikiApply struct{ files *files }

func (wikiApply) Def() tools.Def {
	return tools.Def{Name: "wiki_apply", Description: wikiApplyDescription, Default: true}
}

type wikiApplyArgs struct {
	Page    string       `json:"page" jsonschema:"The page name, no \".md\"." schema:"pattern=^[a-z0-9][a-z0-9_-]{0,63}$"`
	Content *string      `json:"content,omitempty" jsonschema:"The whole page: creates it or replaces it."`
	Append  *string      `json:"append,omitempty" jsonschema:"Text added at the end of an existing page, on a new line."`
	Replace *wikiReplace `json:"replace,omitempty" jsonschema:"Replace text that occurs exactly once in an existing page."`
}

// wikiReplace is wiki_apply's replace: New is a pointer so that a
// missing one is told apart from an empty one (which deletes).
type wikiReplace struct {
	Old string  `json:"old" jsonschema:"Exact text to replace."`
	New *string `json:"new" jsonschema:"Replacement text (may be empty to delete)."`
}

func (t wikiApply) Run(ctx context.Context, env tools.Env, a wikiApplyArgs) (tools.Result, error) {
	if res, ok := checkName("page", a.Page); !ok {
		return res, nil
	}
	given := 0
	for _, set := range []bool{a.Content != nil, a.Append != nil, a.Replace != nil} {
		if set {
			given++
		}
	}
	switch {
	case given != 1:
		return tools.Failf("give exactly one of content (the whole page), append (text to add at the end) or replace ({old, new})"), nil
	case a.Content != nil && strings.TrimSpace(*a.Content) == "":
		return tools.Failf("content is empty; give the page's whole text"), nil
	case a.Append != nil && strings.TrimSpace(*a.Append) == "":
		return tools.Failf("append is empty; give the text to add"), nil
	case a.Replace != nil && (a.Replace.Old == "" || a.Replace.New == nil):
		return tools.Failf("replace needs old (non-empty, exact text of the page) and new"), nil
	case a.Replace != nil && a.Replace.Old == *a.Replace.New:
		return tools.Failf("replace old and new are the same; nothing to change"), nil
	}
	root, err := openDir("wiki_apply", env.HomeDir)
	if err != nil {
		return tools.Result{}, err
	}
	defer root.Close()
	name := wikiDir + "/" + a.Page + ".md"

	t.files.mu.Lock()
	defer t.files.mu.Unlock()
	old, exists, err := readFile(root, name)
	if err != nil {
		return tools.Result{}, fmt.Errorf("wiki_apply: %s: %w", name, err)
	}
	if !exists && a.Content == nil {
		return tools.Failf("there is no wiki page %q; create it with content", a.Page), nil
	}
	var text, done string
	switch {
	case a.Content != nil:
		text, done = withNewline(*a.Content), "created "+name
		if exists {
			done = "overwrote " + name
		}
	case a.Append != nil:
		text, done = joinLines(old, *a.Append), "appended to "+name
	default:
		switch n := strings.Count(old, a.Replace.Old); n {
		case 0:
			return tools.Failf("replace old text not found in %s; read it with wiki_get and copy the text exactly", name), nil
		case 1:
			text, done = strings.Replace(old, a.Replace.Old, *a.Replace.New, 1), "replaced 1 occurrence in "+name
		default:
			return tools.Failf("replace old text occurs %d times in %s; include more surrounding text so it occurs once", n, name), nil
		}
	}
	if mark := env.UntrustedMark(); mark != "" && !strings.HasSuffix(strings.TrimRight(text, "\n"), "_"+mark+"_") {
		text = joinLines(text, "_"+mark+"_")
	}
	if err := tools.WriteAtomic(t.files.svc.Secrets, root, name, []byte(text), 0o644); err != nil {
		return tools.Result{}, fmt.Errorf("wiki_apply: %s: %w", name, err)
	}
	return tools.Result{Output: fmt.Sprintf("%s (%d lines)", done, tools.LineCount(text)), Meta: env.Provenance(name)}, nil
}
