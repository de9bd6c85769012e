package browser

import (
	"context"
	_ "embed"

	"github.com/chromedp/chromedp"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

//go:embed browser_text.md
var textDescription string

// Text returns the visible text of the current tab.
type Text struct{ base }

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (Text) ReadOnly() bool { return true }

func (Text) Def() tools.Def {
	return tools.Def{Name: "browser_text", Description: textDescription + "\n" + fence.Rule}
}

func (x Text) Run(ctx context.Context, env tools.Env, _ noArgs) (tools.Result, error) {
	return x.run(ctx, env, "browser_text", func(in *instance) (tools.Result, error) {
		t, err := currentTab(in, env)
		if err != nil {
			return tools.Failf("browser_text: %v", err), nil
		}
		res, err := pageResult(ctx, in, env, t, "", false)
		if err != nil || res.IsError {
			return res, err
		}
		text, err := chromedp.Run(t.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		if err != nil {
			return tools.Failf("browser_text: %v", err), nil
		}
		if text == "" {
			text = "(the page has no text)"
		}
		res.Output += "\n" + fence.Wrap(res.Meta["url"].(string), text)
		return res, nil
	})
}
