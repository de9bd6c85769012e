package browser

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
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
	return tools.Def{Name: "browser_navigate", Description: navigateDescription + "\n" + fence.Rule, Params: json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "An http:// or https:// URL."},
    "new_tab": {"type": "boolean", "description": "Open it in a new tab of this conversation (default: the current tab)."}
  },
  "required": ["url"],
  "additionalProperties": false
}`)}
}

type navigateArgs struct {
	URL    string `json:"url"`
	NewTab bool   `json:"new_tab"`
}

func (Navigate) NeedsApproval() bool { return true }

func decodeNavigate(args json.RawMessage) (navigateArgs, error) {
	var a navigateArgs
	if msg, ok := tools.DecodeArgs("browser_navigate", args, &a); !ok {
		return a, errors.New(msg)
	}
	_, err := urlArg(a.URL)
	return a, err
}

// Check refuses, before anyone is asked, what is not an http(s) URL and
// a URL the crew's network wall would refuse anyway (a loopback, private
// or metadata address, a name that resolves only to such, a port other
// than 80 and 443): asking the owner to approve a call that can only be
// refused would be a question with no answer.
func (n Navigate) Check(_ tools.Env, args json.RawMessage) error {
	a, err := decodeNavigate(args)
	if err != nil {
		return err
	}
	u, _ := urlArg(a.URL)
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
func (Navigate) AllowWhen(env tools.Env, args json.RawMessage) bool {
	a, err := decodeNavigate(args)
	if err != nil {
		return false
	}
	u, _ := urlArg(a.URL)
	return hostListed(env.Agent.BrowserHosts, u)
}

// AskWhen: any other host asks, even in an autonomous conversation.
func (Navigate) AskWhen(env tools.Env, args json.RawMessage) string {
	a, err := decodeNavigate(args)
	if err != nil {
		return ""
	}
	u, _ := urlArg(a.URL)
	if hostListed(env.Agent.BrowserHosts, u) {
		return ""
	}
	return fmt.Sprintf("opens %s, which is not in browser_hosts", u.Host)
}

func (n Navigate) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	a, err := decodeNavigate(args)
	if err != nil {
		return tools.Failf("browser_navigate: %v", err), nil
	}
	return n.run(ctx, env, "browser_navigate", func(in *instance) (tools.Result, error) {
		var t *tab
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
