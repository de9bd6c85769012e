package browser

import (
	"context"
	_ "embed"
	"encoding/json"
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
	return tools.Def{Name: "browser_screenshot", Description: screenshotDescription, Params: json.RawMessage(`{
  "type": "object",
  "properties": {"full_page": {"type": "boolean", "description": "The whole page rather than the visible part."}},
  "additionalProperties": false
}`)}
}

func (x Screenshot) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	var a struct {
		FullPage bool `json:"full_page"`
	}
	if msg, ok := tools.DecodeArgs("browser_screenshot", args, &a); !ok {
		return tools.Failf("%s", msg), nil
	}
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
