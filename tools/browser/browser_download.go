package browser

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/web"
)

//go:embed browser_download.md
var downloadDescription string

// Download clicks a ref and keeps the file the page sends back in
// workspace/downloads/.
type Download struct{ base }

func (Download) Def() tools.Def {
	return tools.Def{Name: "browser_download", Description: downloadDescription}
}

func (Download) NeedsApproval() bool { return true }

type downloadArgs struct {
	Ref string `json:"ref" jsonschema:"The ref of the link or button that downloads, from the last outline."`
}

// validRef refuses a ref that is not one of an outline's.
func (a downloadArgs) validRef() (string, error) {
	if !refRE.MatchString(a.Ref) {
		return "", fmt.Errorf("browser_download: ref %q is not a ref like e3 from the outline", a.Ref)
	}
	return a.Ref, nil
}

func (x Download) Check(env tools.Env, a downloadArgs) error {
	ref, err := a.validRef()
	if err != nil {
		return err
	}
	if _, ok := x.m.refOf(env.AgentID, env.Conversation, ref); !ok {
		return fmt.Errorf("browser_download: %s is not in this conversation's last outline; call browser_snapshot", ref)
	}
	return nil
}

func (x Download) AskWhen(env tools.Env, a downloadArgs) string {
	ref, err := a.validRef()
	if err != nil {
		return ""
	}
	return askElement(x.m, env, ref, "download")
}

// downloadWait is how long a click has to start a download, and then to
// finish it.
const (
	downloadStart  = 15 * time.Second
	downloadFinish = 2 * time.Minute
)

func (x Download) Run(ctx context.Context, env tools.Env, a downloadArgs) (tools.Result, error) {
	ref, err := a.validRef()
	if err != nil {
		return tools.Failf("%v", err), nil
	}
	return x.run(ctx, env, "browser_download", func(in *instance) (tools.Result, error) {
		t, err := currentTab(in, env)
		if err != nil {
			return tools.Failf("browser_download: %v", err), nil
		}
		e, err := fresh(t, ref)
		if err != nil {
			return tools.Failf("browser_download: %v", err), nil
		}
		rel, size, err := in.download(ctx, env, t, e)
		if err != nil {
			return tools.Failf("browser_download: %v", err), nil
		}
		res, err := pageResult(ctx, in, env, t, "", false)
		if err != nil || res.IsError {
			return res, err
		}
		res.Output += fmt.Sprintf("Saved: %s (%d KiB), from %s %q [%s]", rel, size>>10, e.Role, e.Name, ref)
		res.Parts = []tools.Part{tools.FilePart(rel, "")}
		res.Meta["saved"] = rel
		return res, nil
	})
}

// download lets the browser save what clicking e sends, into the staging
// folder in the profile, then moves it into workspace/downloads/ under a
// safe name; one over web.MaxDownloadBytes is cancelled.
func (in *instance) download(ctx context.Context, env tools.Env, t *tab, e element) (string, int, error) {
	bctx, cancel := context.WithTimeout(in.ctx, downloadStart+downloadFinish)
	defer cancel()
	begins := chromedp.BrowserEvents(bctx, cdpbrowser.DownloadWillBegin)
	progress := chromedp.BrowserEvents(bctx, cdpbrowser.DownloadProgress)
	if _, err := chromedp.CallBrowser(in.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: in.staging, EventsEnabled: new(true)}); err != nil {
		return "", 0, err
	}
	defer chromedp.CallBrowser(in.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDeny})
	if err := click(t, e.Backend); err != nil {
		return "", 0, err
	}
	var begin cdpbrowser.EventDownloadWillBegin
	started := make(chan struct{})
	go func() {
		for ev, err := range begins {
			if err != nil {
				return
			}
			begin = ev
			close(started)
			return
		}
	}()
	select {
	case <-started:
	case <-time.After(downloadStart):
		return "", 0, fmt.Errorf("clicking %s %q started no download within %s", e.Role, e.Name, downloadStart)
	case <-ctx.Done():
		return "", 0, ctx.Err()
	}
	for ev, err := range progress {
		if err != nil {
			return "", 0, fmt.Errorf("the download of %s did not finish: %v", begin.URL, err)
		}
		if ev.GUID != begin.GUID {
			continue
		}
		if ev.ReceivedBytes > web.MaxDownloadBytes || ev.TotalBytes > web.MaxDownloadBytes {
			chromedp.CallBrowser(in.ctx, cdpbrowser.CancelDownload, cdpbrowser.CancelDownloadParams{GUID: ev.GUID})
			os.Remove(filepath.Join(in.staging, ev.GUID))
			return "", 0, fmt.Errorf("%s is %w; cancelled", begin.URL, web.ErrTooLarge)
		}
		switch ev.State {
		case cdpbrowser.DownloadProgressStateCanceled:
			return "", 0, fmt.Errorf("the download of %s was cancelled (the wall may have refused it)", begin.URL)
		case cdpbrowser.DownloadProgressStateCompleted:
			staged := filepath.Join(in.staging, ev.GUID)
			defer os.Remove(staged)
			data, err := os.ReadFile(staged)
			if err != nil {
				return "", 0, err
			}
			rel, err := web.SaveDownload(env.Workspace, begin.SuggestedFilename, data)
			return rel, len(data), err
		}
	}
	return "", 0, errors.New("the download did not finish")
}
