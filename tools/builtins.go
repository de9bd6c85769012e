package tools

// Builtins returns the built-in tools of this package, for New.
func Builtins() []Tool {
	return []Tool{
		WorkspaceList{}, WorkspaceRead{}, WorkspaceGlob{}, WorkspaceGrep{},
		WorkspaceWrite{}, WorkspaceEdit{},
		ShellRun{}, TaskStop{},
		ToolOutputRead{},
		TodoWrite{},
	}
}

// Compile-time checks of the gate hooks.
var (
	_ Gated   = WorkspaceWrite{}
	_ Gated   = WorkspaceEdit{}
	_ Gated   = ShellRun{}
	_ Asker   = ShellRun{}
	_ Allower = ShellRun{}
	_ Allower = WorkspaceWrite{}
	_ Allower = WorkspaceEdit{}
	_ Checker = WorkspaceWrite{}
	_ Checker = WorkspaceEdit{}
	_ Checker = ShellRun{}
)
