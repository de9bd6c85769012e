package browser

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
	"github.com/my-agent-crew/crew/tools/web/wall"
)

//go:embed browser_navigate.md
var navigateDescription string

// Navigate opens a URL in the conversation's tab (or a new one).
type Navigate struct{ base }

func (Navigate) Def() tools.Def {
	return tools.Def{Name: "browser_navigate", Description: navigateDescription + "\n" + fence.Rule}
}

type navigateArgs struct {
	URL    string `json:"url" jsonschema:"An http:// or https:// URL."`
	NewTab bool   `json:"new_tab,omitempty" jsonschema:"Open it in a new tab of this conversation (default: the current tab)."`
}

func (Navigate) NeedsApproval() bool { return true }

// Check refuses, before anyone is asked, what is not an http(s) URL and
// a URL the crew's network wall would refuse anyway (a loopback, private
// or metadata address, a name that resolves only to such, a port other
// than 80 and 443): asking the owner to approve a call that can only be
// refused would be a question with no answer.
func (n Navigate) Check(_ tools.Env, a navigateArgs) error {
	u, err := urlArg(a.URL)
	if err != nil {
		return err
	}
	w := wall.New()
	if n.m != nil && n.m.cfg.Wall != nil {
		w = n.m.cfg.Wall
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := w.CheckURL(ctx, u); err != nil {
		return fmt.Errorf("browser_navigate: not opened, nothing was asked or changed: %v", err)
	}
	return nil
}

// AllowWhen: a host in browser_hosts is routine.
func (Navigate) AllowWhen(env tools.Env, a navigateArgs) bool {
	u, err := urlArg(a.URL)
	if err != nil {
		return false
	}
	return hostListed(env.Agent.BrowserHosts, u)
}

// AskWhen: any other host asks, even in an autonomous conversation.
func (Navigate) AskWhen(env tools.Env, a navigateArgs) string {
	u, err := urlArg(a.URL)
	if err != nil {
		return ""
	}
	if hostListed(env.Agent.BrowserHosts, u) {
		return ""
	}
	return fmt.Sprintf("opens %s, which is not in browser_hosts", u.Host)
}

func (n Navigate) Run(ctx context.Context, env tools.Env, a navigateArgs) (tools.Result, error) {
	if _, err := urlArg(a.URL); err != nil {
		return tools.Failf("browser_navigate: %v", err), nil
	}
	return n.run(ctx, env, "browser_navigate", func(in *instance) (tools.Result, error) {
		var t *tab
		var err error
		if !a.NewTab {
			t, _ = currentTab(in, env)
		}
		if t == nil {
			if t, err = in.newTab(env.Conversation); err != nil {
				return tools.Result{}, err
			}
		}
		nctx, cancel := context.WithTimeout(t.ctx, 45*time.Second)
		defer cancel()
		in.proxy.takeRefusals()
		if err := chromedp.Do(nctx, chromedp.Navigate(a.URL)); err != nil {
			res, _ := pageResult(ctx, in, env, t, "", false)
			return tools.Failf("browser_navigate: %s did not load: %v\n%s", a.URL, err, res.Output), nil
		}
		return pageResult(ctx, in, env, t, "", true)
	})
}
