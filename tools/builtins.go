package tools

// Builtins returns the built-in tools of this package, for New, with the
// services they use.
func Builtins(s Services) []Tool {
	return []Tool{
		WorkspaceList{}, WorkspaceRead{}, WorkspaceGlob{}, WorkspaceGrep{},
		WorkspaceWrite{Secrets: s.Secrets, Proposer: s.Proposer}, WorkspaceEdit{Secrets: s.Secrets, Proposer: s.Proposer},
		ShellRun{Background: s.Background, Sandbox: s.Sandbox}, TaskStop{Background: s.Background},
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
