// Package tools holds the tool registry and the built-in tools the turn loop
// offers to models. Adapters to what a tool wraps live one level down
// (tools/shell, later tools/browser, tools/mcp, …).
//
// The contract every tool keeps:
//
//   - Failure is data. A call that cannot do what was asked (bad arguments, a
//     path outside the workspace, a missing file, a command that exits
//     non-zero) returns Result{IsError: true} with a message the model can act
//     on, and a nil error. A Go error means the harness itself is broken (the
//     workspace is missing, the context was cancelled, a disk write failed
//     where the harness keeps its own files); the loop records it as such.
//
//   - Confinement. Every path argument goes through Resolve: it is taken
//     relative to Env.Workspace (an absolute path is accepted only if it lies
//     inside), symlinks are resolved, and anything that ends up outside the
//     workspace is refused. File operations then go through an os.Root on the
//     workspace, so a symlink swapped in between the check and the use cannot
//     escape either. Paths shown to the model are workspace-relative.
//
//   - Gate hooks, per call (R-GATE-4). A tool may implement Gated (needs
//     approval in a supervised conversation), Asker (this call must ask, with
//     a reason for the approval card, even when autonomous) and Allower (this
//     call is routine and runs without asking). The loop's gate applies them
//     in its fixed order through NeedsApproval, AskReason and Routine; tools
//     only answer the questions.
//
//   - Refused before asked. A tool that can tell a call will be refused
//     anyway (arguments that do not decode, a path outside the workspace, a
//     shell deny pattern) implements Checker; the loop checks before the
//     gate, so nobody is asked to approve a call that would not run. Check
//     gives Run's own words and changes nothing; Run checks again.
//
//   - Long output. The loop cuts each result with Truncate to the agent's
//     tool_output_chars and saves the whole text with Spill; tool_output_read
//     (Def.Uncut) pages through it again. Parts beside the text (an image, a
//     file reference) and metadata travel in Result.Parts and Result.Meta.
//
// Each tool is one .go file with its description in an embedded .md file
// next to it, declared once by its Def (Default: offered to agents with no
// tools list) and registered in its package's list (Builtins here); see
// docs/tools.md.
package tools
