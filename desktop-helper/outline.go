package main

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// actionable are the roles an outline gives a ref: what a person clicks,
// types into or scrolls.
var actionable = map[string]bool{
	"push button": true, "toggle button": true, "check box": true, "radio button": true, "switch": true,
	"menu item": true, "check menu item": true, "radio menu item": true, "menu": true,
	"combo box": true, "text": true, "entry": true, "password text": true, "spin button": true,
	"slider": true, "link": true, "page tab": true, "list item": true, "tree item": true,
	"table cell": true, "terminal": true,
}

// Bounds of one walk: a tree bigger than this is cut, and says so.
const (
	maxNodes = 3000
	maxDepth = 40
	maxWalk  = 15 * time.Second
)

// target is what a ref pointed at when the outline was made.
type target struct {
	node
	role, name string
}

// outline is the result of one walk.
type outline struct {
	text string
	refs map[string]target
	list []wire.Element
}

// walk builds the outline of app's windows (those named title first, else
// every showing one).
func (a *atspi) walk(app node, appName, title string) (outline, error) {
	o := outline{refs: map[string]target{}}
	frames, err := a.children(app)
	if err != nil {
		return o, fmt.Errorf("read the app's windows: %w", err)
	}
	var pick []node
	for _, f := range frames {
		if n, err := a.name(f); err == nil && n == title && title != "" {
			pick = append(pick, f)
		}
	}
	if len(pick) == 0 {
		pick = frames
	}
	w := walker{a: a, o: &o, deadline: time.Now().Add(maxWalk)}
	fmt.Fprintf(&w.b, "app %s", appName)
	if title != "" {
		fmt.Fprintf(&w.b, " (window %q)", title)
	}
	w.b.WriteByte('\n')
	for _, f := range pick {
		w.visit(f, 0, 0)
	}
	if w.cut {
		fmt.Fprintf(&w.b, "(outline cut at %d elements)\n", w.count)
	}
	o.text = w.b.String()
	return o, nil
}

type walker struct {
	a        *atspi
	o        *outline
	b        strings.Builder
	count    int
	cut      bool
	deadline time.Time
}

func (w *walker) visit(n node, depth, indent int) {
	if w.count >= maxNodes || depth > maxDepth || time.Now().After(w.deadline) {
		w.cut = true
		return
	}
	w.count++
	in, err := w.a.info(n)
	if err != nil || !in.states.has(stateShowing) || !in.states.has(stateVisible) {
		return // gone meanwhile, or hidden (another notebook page, a closed menu)
	}
	shown := false
	if actionable[in.role] || in.name != "" {
		shown = true
		w.line(in, indent)
	}
	kids, err := w.a.children(n)
	if err != nil {
		return
	}
	next := indent
	if shown {
		next++
	}
	for _, k := range kids {
		w.visit(k, depth+1, next)
	}
}

func (w *walker) line(in info, indent int) {
	b := &w.b
	b.WriteString(strings.Repeat("  ", indent))
	fmt.Fprintf(b, "- %s", in.role)
	if in.name != "" {
		fmt.Fprintf(b, " %q", clipText(in.name, 120))
	}
	if actionable[in.role] {
		ref := fmt.Sprintf("e%d", len(w.o.list)+1)
		w.o.refs[ref] = target{node: in.node, role: in.role, name: in.name}
		w.o.list = append(w.o.list, wire.Element{Ref: ref, Role: in.role, Name: in.name})
		fmt.Fprintf(b, " [ref=%s]", ref)
	}
	var flags []string
	for _, f := range []struct {
		bit  uint
		name string
	}{{stateChecked, "checked"}, {statePressed, "pressed"}, {stateSelected, "selected"}, {stateEditable, "editable"}, {stateFocused, "focused"}} {
		if in.states.has(f.bit) {
			flags = append(flags, f.name)
		}
	}
	if !in.states.has(stateSensitive) {
		flags = append(flags, "disabled")
	}
	if in.secure() {
		flags = append(flags, "secure")
	}
	if len(flags) > 0 {
		fmt.Fprintf(b, " (%s)", strings.Join(flags, ", "))
	}
	if in.editable() && !in.secure() {
		if t, err := w.a.text(in.node); err == nil {
			fmt.Fprintf(b, " value=%q", clipText(t, 200))
		}
	}
	b.WriteByte('\n')
}

func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
