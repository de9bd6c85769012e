package consolidate

import "github.com/my-agent-crew/crew/events/view"

// Op is what a diff line does: kept, added or removed (view.Op).
type Op = view.Op

// Diff operations, shown as the first character of a unified diff line.
const (
	Same = view.Same
	Add  = view.Add
	Del  = view.Del
)

// Line is one line of a diff (view.Line).
type Line = view.Line

// Diff is the line diff of old and new (view.Diff).
func Diff(old, new string) []Line { return view.Diff(old, new) }
