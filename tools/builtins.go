package tools

// Builtins returns the built-in tools of this package, for New, with the
// services they use.
func Builtins(s Services) []Tool {
	return []Tool{
		NewFunc[workspaceListArgs](WorkspaceList{}), NewFunc[workspaceReadArgs](WorkspaceRead{}),
		NewFunc[workspaceGlobArgs](WorkspaceGlob{}), NewFunc[workspaceGrepArgs](WorkspaceGrep{}),
		NewFunc[writeArgs](WorkspaceWrite{Secrets: s.Secrets, Proposer: s.Proposer}),
		NewFunc[editArgs](WorkspaceEdit{Secrets: s.Secrets, Proposer: s.Proposer}),
		NewFunc[shellArgs](ShellRun{Background: s.Background, Sandbox: s.Sandbox}), NewFunc[taskStopArgs](TaskStop{Background: s.Background}),
		NewFunc[toolOutputReadArgs](ToolOutputRead{}),
		NewFunc[todoWriteArgs](TodoWrite{}),
	}
}

// Compile-time checks of the gate hooks.
var (
	_ Gated                                       = WorkspaceWrite{}
	_ Gated                                       = WorkspaceEdit{}
	_ Gated                                       = ShellRun{}
	_ interface{ AskWhen(Env, shellArgs) string } = ShellRun{}
	_ interface{ AllowWhen(Env, shellArgs) bool } = ShellRun{}
	_ interface{ AllowWhen(Env, writeArgs) bool } = WorkspaceWrite{}
	_ interface{ AllowWhen(Env, editArgs) bool }  = WorkspaceEdit{}
	_ interface{ Check(Env, writeArgs) error }    = WorkspaceWrite{}
	_ interface{ Check(Env, editArgs) error }     = WorkspaceEdit{}
	_ interface{ Check(Env, shellArgs) error }    = ShellRun{}
)
