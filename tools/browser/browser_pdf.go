package browser

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/chromedp/chromedp"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/web"
)

//go:embed browser_pdf.md
var pdfDescription string

// PDF prints the current tab into workspace/downloads/.
type PDF struct{ base }

func (PDF) Def() tools.Def {
	return tools.Def{Name: "browser_pdf", Description: pdfDescription}
}

type pdfArgs struct {
	Name string `json:"name,omitempty" jsonschema:"File name (default: the page title); .pdf is added."`
}

func (x PDF) Run(ctx context.Context, env tools.Env, a pdfArgs) (tools.Result, error) {
	return x.run(ctx, env, "browser_pdf", func(in *instance) (tools.Result, error) {
		t, err := currentTab(in, env)
		if err != nil {
			return tools.Failf("browser_pdf: %v", err), nil
		}
		res, err := pageResult(ctx, in, env, t, "", false)
		if err != nil || res.IsError {
			return res, err
		}
		data, err := chromedp.Run(t.ctx, chromedp.PrintToPDF(chromedp.PDFPrintBackground()))
		if err != nil {
			return tools.Failf("browser_pdf: %v", err), nil
		}
		name := a.Name
		if name == "" {
			name, _ = res.Meta["title"].(string)
		}
		rel, err := web.SaveDownload(env.Workspace, pdfName(name), data)
		if err != nil {
			return tools.Failf("browser_pdf: %v", err), nil
		}
		res.Output += fmt.Sprintf("Saved: %s (%d KiB)", rel, len(data)>>10)
		res.Parts = []tools.Part{tools.FilePart(rel, "application/pdf")}
		res.Meta["saved"] = rel
		return res, nil
	})
}

func pdfName(name string) string {
	name = web.SafeName(name, "page")
	if len(name) < 4 || name[len(name)-4:] != ".pdf" {
		name += ".pdf"
	}
	return name
}
