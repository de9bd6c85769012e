package browser

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/chromedp/chromedp"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed browser_screenshot.md
var screenshotDescription string

// Screenshot returns a PNG of the current tab as an image part.
type Screenshot struct{ base }

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (Screenshot) ReadOnly() bool { return true }

func (Screenshot) Def() tools.Def {
	return tools.Def{Name: "browser_screenshot", Description: screenshotDescription}
}

type screenshotArgs struct {
	FullPage bool `json:"full_page,omitempty" jsonschema:"The whole page rather than the visible part."`
}

func (x Screenshot) Run(ctx context.Context, env tools.Env, a screenshotArgs) (tools.Result, error) {
	return x.run(ctx, env, "browser_screenshot", func(in *instance) (tools.Result, error) {
		t, err := currentTab(in, env)
		if err != nil {
			return tools.Failf("browser_screenshot: %v", err), nil
		}
		res, err := pageResult(ctx, in, env, t, "", false)
		if err != nil || res.IsError {
			return res, err
		}
		act := chromedp.CaptureScreenshot()
		if a.FullPage {
			act = chromedp.FullScreenshot(100)
		}
		png, err := chromedp.Run(t.ctx, act)
		if err != nil {
			return tools.Failf("browser_screenshot: %v", err), nil
		}
		res.Output += fmt.Sprintf("Screenshot: PNG, %d KiB, attached as an image.", len(png)>>10)
		res.Parts = []tools.Part{tools.ImagePart("image/png", png)}
		res.Meta["screenshot"] = true
		return res, nil
	})
}
