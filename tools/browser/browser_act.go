package browser

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"regexp"

	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

//go:embed browser_act.md
var actDescription string

// Act clicks, types, selects, presses or uploads on an element of the
// last outline, by ref.
type Act struct{ base }

func (Act) Def() tools.Def {
	return tools.Def{Name: "browser_act", Description: actDescription + "\n" + fence.Rule}
}

type actArgs struct {
	Ref    string `json:"ref" jsonschema:"The element's ref from the last outline, like e3."`
	Action string `json:"action" jsonschema:"What to do with the element." schema:"enum=click|type|select|press|upload"`
	Text   string `json:"text,omitempty" jsonschema:"type: the text to put in the field (it replaces what is there)."`
	Submit bool   `json:"submit,omitempty" jsonschema:"type: press Enter after typing."`
	Option string `json:"option,omitempty" jsonschema:"select: the option's label or value."`
	Key    string `json:"key,omitempty" jsonschema:"press: Enter, Tab, Escape, Space, Backspace, Delete, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, PageUp, PageDown, Home or End."`
	Path   string `json:"path,omitempty" jsonschema:"upload: a file in the workspace to put in a file field."`
}

var refRE = regexp.MustCompile(`^e[0-9]{1,6}$`)

var keys = map[string]string{
	"Enter": kb.Enter, "Tab": kb.Tab, "Escape": kb.Escape, "Space": " ", "Backspace": kb.Backspace, "Delete": kb.Delete,
	"ArrowUp": kb.ArrowUp, "ArrowDown": kb.ArrowDown, "ArrowLeft": kb.ArrowLeft, "ArrowRight": kb.ArrowRight,
	"PageUp": kb.PageUp, "PageDown": kb.PageDown, "Home": kb.Home, "End": kb.End,
}

// validAct refuses an act the page cannot do: a malformed ref, a select
// without option, an unknown key, an upload from outside the workspace.
func validAct(env tools.Env, a actArgs) error {
	if !refRE.MatchString(a.Ref) {
		return fmt.Errorf("browser_act: ref %q is not a ref like e3 from the outline", a.Ref)
	}
	switch a.Action {
	case "click":
	case "type":
	case "select":
		if a.Option == "" {
			return errors.New("browser_act: select needs option")
		}
	case "press":
		if _, ok := keys[a.Key]; !ok {
			return fmt.Errorf("browser_act: key %q is not one of the keys listed", a.Key)
		}
	case "upload":
		if _, err := tools.Resolve(env.Workspace, a.Path); err != nil || a.Path == "" {
			return fmt.Errorf("browser_act: upload path %q is not a file in the workspace", a.Path)
		}
	default:
		return errors.New("browser_act: action must be click, type, select, press or upload")
	}
	return nil
}

func (Act) NeedsApproval() bool { return true }

// Check refuses bad arguments and a ref the conversation was never shown
// (the browser may have closed while idle) before anyone is asked.
func (x Act) Check(env tools.Env, a actArgs) error {
	if err := validAct(env, a); err != nil {
		return err
	}
	if _, ok := x.m.refOf(env.AgentID, env.Conversation, a.Ref); !ok {
		return fmt.Errorf("browser_act: %s is not in this conversation's last outline; call browser_snapshot", a.Ref)
	}
	return nil
}

// AskWhen: an upload, or an element whose name matches an ask pattern,
// asks even in an autonomous conversation.
func (x Act) AskWhen(env tools.Env, a actArgs) string {
	if validAct(env, a) != nil {
		return ""
	}
	if a.Action == "upload" {
		return fmt.Sprintf("uploads %s from the workspace to the page", a.Path)
	}
	return askElement(x.m, env, a.Ref, a.Action)
}

// askElement is the ask reason for acting on ref, if its name matches.
func askElement(m *Manager, env tools.Env, ref, verb string) string {
	e, ok := m.refOf(env.AgentID, env.Conversation, ref)
	if !ok {
		return ""
	}
	if p, hit := askPattern(env.Agent.BrowserAskPatterns, e.Name); hit {
		return fmt.Sprintf("%s on %s %q, which matches an ask pattern (%s)", verb, e.Role, e.Name, p)
	}
	return ""
}

func (x Act) Run(ctx context.Context, env tools.Env, a actArgs) (tools.Result, error) {
	if err := validAct(env, a); err != nil {
		return tools.Failf("%v", err), nil
	}
	return x.run(ctx, env, "browser_act", func(in *instance) (tools.Result, error) {
		t, err := currentTab(in, env)
		if err != nil {
			return tools.Failf("browser_act: %v", err), nil
		}
		e, err := fresh(t, a.Ref)
		if err != nil {
			return tools.Failf("browser_act: %v", err), nil
		}
		if err := act(env, t, e, a); err != nil {
			return tools.Failf("browser_act: %v", err), nil
		}
		done := fmt.Sprintf("Did: %s on %s %q [%s].", a.Action, e.Role, e.Name, a.Ref)
		return pageResult(ctx, in, env, t, done, true)
	})
}

// act does a on element e of t.
func act(env tools.Env, t *tab, e element, a actArgs) error {
	switch a.Action {
	case "click":
		return click(t, e.Backend)
	case "type":
		secret, err := callOn[bool](t, e.Backend, `function(){ return (this.type||"").toLowerCase() === "password" || /password/i.test(this.getAttribute && this.getAttribute("autocomplete") || "") }`)
		if err != nil {
			return err
		}
		if secret {
			return fmt.Errorf("%s %q is a password field: agents do not type passwords; the owner signs in with `crew browser login %s`", e.Role, e.Name, env.AgentID)
		}
		if _, err := chromedp.Call(t.ctx, dom.Focus, dom.FocusParams{BackendNodeID: e.Backend}); err != nil {
			return fmt.Errorf("the element cannot take text: %v", err)
		}
		if _, err := callOn[bool](t, e.Backend, `function(){ if ("value" in this) { this.value = ""; this.dispatchEvent(new Event("input", {bubbles: true})) } else if (this.isContentEditable) { this.textContent = "" } return true }`); err != nil {
			return err
		}
		if a.Text != "" {
			if _, err := chromedp.Call(t.ctx, input.InsertText, input.InsertTextParams{Text: a.Text}); err != nil {
				return err
			}
		}
		if a.Submit {
			return chromedp.Do(t.ctx, chromedp.KeyEvent(kb.Enter))
		}
		return nil
	case "select":
		ok, err := callOn[bool](t, e.Backend, `function(v){ const o = [...(this.options || [])].find(o => o.value === v || o.label.trim() === v || o.text.trim() === v); if (!o) return false; this.value = o.value; this.dispatchEvent(new Event("input", {bubbles: true})); this.dispatchEvent(new Event("change", {bubbles: true})); return true }`, a.Option)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s %q has no option %q", e.Role, e.Name, a.Option)
		}
		return nil
	case "press":
		if _, err := chromedp.Call(t.ctx, dom.Focus, dom.FocusParams{BackendNodeID: e.Backend}); err != nil {
			return fmt.Errorf("the element cannot take focus: %v", err)
		}
		return chromedp.Do(t.ctx, chromedp.KeyEvent(keys[a.Key]))
	case "upload":
		abs, err := tools.Resolve(env.Workspace, a.Path)
		if err != nil {
			return err
		}
		isFile, err := callOn[bool](t, e.Backend, `function(){ return this.type === "file" }`)
		if err != nil {
			return err
		}
		if !isFile {
			return fmt.Errorf("%s %q is not a file field", e.Role, e.Name)
		}
		_, err = chromedp.Call(t.ctx, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: []string{abs}, BackendNodeID: e.Backend})
		return err
	}
	return fmt.Errorf("unknown action %q", a.Action)
}
