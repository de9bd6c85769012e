package browser

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

//go:embed browser_tabs.md
var tabsDescription string

// Tabs lists, selects and closes the conversation's tabs.
type Tabs struct{ base }

func (Tabs) Def() tools.Def {
	return tools.Def{Name: "browser_tabs", Description: tabsDescription}
}

type tabsArgs struct {
	Action string `json:"action,omitempty" jsonschema:"Default list." schema:"enum=list|select|close"`
	Tab    int    `json:"tab,omitempty" jsonschema:"The tab number for select and close." schema:"minimum=1"`
}

func (x Tabs) Run(ctx context.Context, env tools.Env, a tabsArgs) (tools.Result, error) {
	return x.run(ctx, env, "browser_tabs", func(in *instance) (tools.Result, error) {
		in.tabsMu.RLock()
		ct := in.tabs[env.Conversation]
		n := 0
		if ct != nil {
			n = len(ct.list)
		}
		in.tabsMu.RUnlock()
		switch a.Action {
		case "", "list":
		case "select", "close":
			if a.Tab < 1 || a.Tab > n {
				return tools.Failf("browser_tabs: there is no tab %d (this conversation has %d)", a.Tab, n), nil
			}
			if a.Action == "close" {
				in.closeTab(env.Conversation, a.Tab-1)
			} else {
				in.tabsMu.Lock()
				ct.current = a.Tab - 1
				in.tabsMu.Unlock()
			}
		default:
			return tools.Failf("browser_tabs: action must be list, select or close"), nil
		}
		in.tabsMu.RLock()
		var list []*tab
		cur := -1
		if ct := in.tabs[env.Conversation]; ct != nil {
			list, cur = append(list, ct.list...), ct.current
		}
		in.tabsMu.RUnlock()
		if len(list) == 0 {
			return tools.Result{Output: "No tabs are open in this conversation."}, nil
		}
		var b strings.Builder
		var rows []map[string]any
		for i, t := range list {
			title, u := targetInfo(t)
			mark := " "
			if i == cur {
				mark = "*"
			}
			fmt.Fprintf(&b, "%s %d. %s — %s\n", mark, i+1, oneLine(title), fence.Link(u))
			rows = append(rows, map[string]any{"title": title, "url": u})
		}
		// Titles are the pages' words: fenced (R-SEC-1).
		out := fence.Wrap("browser tabs", b.String()) + "\n(* is the current tab; the other browser tools work on it)"
		return tools.Result{Output: out, Meta: map[string]any{"tabs": rows, "current": cur + 1}}, nil
	})
}
