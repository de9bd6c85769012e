package browser

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
)

// interactive are the roles that get a ref: what browser_act can act on.
var interactive = map[string]bool{
	"link": true, "button": true, "textbox": true, "checkbox": true, "combobox": true, "radio": true,
	"searchbox": true, "menuitem": true, "menuitemcheckbox": true, "menuitemradio": true, "tab": true,
	"switch": true, "slider": true, "option": true, "listbox": true, "spinbutton": true, "treeitem": true,
}

// skipped roles are left out of the outline (their children are kept).
var skipped = map[string]bool{"generic": true, "none": true, "InlineTextBox": true, "LineBreak": true, "presentation": true}

// element is what a ref stood for when the outline was made.
type element struct {
	Backend cdp.BackendNodeID
	Role    string
	Name    string
}

// maxOutlineLines caps one outline (the loop also cuts the text).
const maxOutlineLines = 2000

// buildOutline renders the accessibility tree as an indented outline, one
// line per node that says something, with a ref [eN] on every interactive
// one, and returns the refs.
func buildOutline(nodes []*accessibility.Node) (string, map[string]element) {
	byID := make(map[accessibility.NodeID]*accessibility.Node, len(nodes))
	for _, n := range nodes {
		byID[n.NodeID] = n
	}
	refs := map[string]element{}
	var b strings.Builder
	lines := 0
	var walk func(n *accessibility.Node, depth int)
	walk = func(n *accessibility.Node, depth int) {
		if n == nil || lines >= maxOutlineLines {
			return
		}
		role, name := axString(n.Role), oneLine(axString(n.Name))
		show := !n.Ignored && !skipped[role] && !(role == "StaticText" && name == "")
		if role == "StaticText" && n.ParentID != "" {
			// A text node repeating its parent's name or value (a
			// heading's, a link's text, a field's value) says nothing new.
			if p := byID[n.ParentID]; p != nil && (oneLine(axString(p.Name)) == name || oneLine(axString(p.Value)) == name) {
				show = false
			}
		}
		if show {
			b.WriteString(strings.Repeat("  ", depth))
			b.WriteString(role)
			if name != "" {
				fmt.Fprintf(&b, " %q", cut(name, 200))
			}
			if interactive[role] && n.BackendDOMNodeID != 0 {
				ref := fmt.Sprintf("e%d", len(refs)+1)
				refs[ref] = element{Backend: n.BackendDOMNodeID, Role: role, Name: name}
				b.WriteString(" [" + ref + "]")
			}
			if v := oneLine(axString(n.Value)); v != "" && role != "StaticText" {
				fmt.Fprintf(&b, " value=%q", cut(v, 200))
			}
			for _, p := range n.Properties {
				switch p.Name {
				case accessibility.PropertyNameChecked, accessibility.PropertyNameDisabled, accessibility.PropertyNameExpanded,
					accessibility.PropertyNameSelected, accessibility.PropertyNameRequired, accessibility.PropertyNameLevel:
					if v := axString(p.Value); v != "" && v != "false" {
						fmt.Fprintf(&b, " %s=%s", p.Name, v)
					}
				}
			}
			b.WriteByte('\n')
			lines++
			depth++
		}
		for _, c := range n.ChildIDs {
			walk(byID[c], depth)
		}
	}
	if len(nodes) > 0 {
		walk(nodes[0], 0)
	}
	if lines >= maxOutlineLines {
		fmt.Fprintf(&b, "… (outline cut at %d lines)\n", maxOutlineLines)
	}
	return b.String(), refs
}

// axString is an AX value as text (its JSON is a string, a number or a
// boolean).
func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var x any
	if err := json.Unmarshal(v.Value, &x); err != nil {
		return strings.Trim(string(v.Value), `"`)
	}
	switch t := x.(type) {
	case string:
		return t
	case nil:
		return ""
	default:
		return fmt.Sprint(t)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
