package loop

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/tools"
)

// The gate table (issue 26): for every tool and every seat a conversation
// can sit in, one decision, from SeatGate — the function the pipeline
// (call.go) and the script host (tool_script.go) ask for every call, and
// that docs/security.md's table is generated from (GateTable).

// SeatKind is where a call is made from, as the gate sees it.
type SeatKind struct {
	Name       string
	Channel    string // web, telegram, api, mcp, job, delegate, team
	Autonomous bool   // gated tools run unasked (ask reasons still ask)
	Child      bool   // a delegated conversation: questions go to its parent, no delegating again
	Lead       bool   // the lead's conversation of a team
	Member     bool   // a teammate's conversation
	Script     string // "" a direct call; "read" or "gated": a call from tool_script
}

// Seats are the table's columns.
var Seats = []SeatKind{
	{Name: "supervised web", Channel: "web"},
	{Name: "Telegram", Channel: "telegram"},
	{Name: "API channel", Channel: "api"},
	{Name: "MCP client", Channel: "mcp"}, // crew_send over /mcp or crew mcp serve: supervised, approvals and questions wait for the owner elsewhere
	{Name: "autonomous job", Channel: "job", Autonomous: true},
	{Name: "delegated child", Channel: DelegateChannel, Autonomous: true, Child: true},
	{Name: "team lead", Channel: "web", Lead: true},
	{Name: "teammate", Channel: "team", Autonomous: true, Member: true},
	{Name: "script (read-only)", Channel: "web", Script: "read"},
	{Name: "script (gated)", Channel: "web", Script: ScriptGated},
}

// Decision is the gate's answer for a tool in a seat.
type Decision string

const (
	Runs       Decision = "runs"
	Asks       Decision = "asks"
	AsksOwner  Decision = "asks (a question)" // ask_user: the call is the question
	Refused    Decision = "refused"
	NotOffered Decision = "not offered"
)

// Team tools by seat (seed 001 §4): the lead's own, the members' own, and
// those both use. They are the loop's to know, so the gate and the team
// runtime (loop/team Seated) read the same lists.
var (
	LeadOnlyTools   = []string{"propose_team", "spawn_teammate", "create_task", "create_worktree", "request_shutdown", "request_plan", "review_plan"}
	MemberOnlyTools = []string{"claim_task", "complete_task", "submit_plan"}
	TeamTools       = []string{"list_tasks", "get_task", "send_message", "list_teammates", "update_task"}
	// MemberRefused are tools a teammate is never given, whatever its
	// profile lists: it schedules or cancels nothing and delegates nothing.
	MemberRefused = []string{"schedule_create", "cancel_cron", DelegateTool}
)

// Offered reports whether a tool of this name is offered in the seat at
// all, whatever the agent lists.
func Offered(name string, seat SeatKind) bool {
	switch {
	case slices.Contains(LeadOnlyTools, name):
		return seat.Lead
	case slices.Contains(MemberOnlyTools, name):
		return seat.Member
	case slices.Contains(TeamTools, name):
		return seat.Lead || seat.Member
	case seat.Member && slices.Contains(MemberRefused, name):
		return false
	case seat.Child && name == DelegateTool:
		return false // delegation goes one level deep
	case seat.Script != "" && name == ToolScriptTool:
		return false
	}
	return true
}

// SeatGate is the gate for one call in a seat, in the seed's fixed order
// (R-GATE-4) after what the seat offers and what a script may call:
//
//   - a tool the seat does not offer is NotOffered;
//   - from a script: loop tools are Refused (call them directly); in
//     read-only mode a tool that changes things, or a call that would ask,
//     is Refused; in gated mode a call the gate would ask about is Refused
//     (the script stops and says to call it directly);
//   - else Gate's verdict: ask_user is the Question (in a delegated
//     or a teammate's conversation it goes back to the delegating agent or
//     the lead with the reply: it Runs), a call with
//     an ask reason Asks even when autonomous, a routine call Runs, the rest
//     follows autonomous and auto_approve.
//
// reason is the ask reason or the refusal.
func SeatGate(tool tools.Tool, seat SeatKind, env tools.Env, args json.RawMessage, autoApprove []string) (Decision, string) {
	name := tool.Def().Name
	if !Offered(name, seat) {
		return NotOffered, ""
	}
	if seat.Script != "" {
		if !scriptable(tool) && !(name == DelegateTool && seat.Script == ScriptGated) {
			return Refused, fmt.Sprintf("%s cannot be called from a script: call it directly.", name)
		}
		if seat.Script != ScriptGated {
			if name == DelegateTool || !readOnly(tool, env, args) {
				return Refused, fmt.Sprintf("%s cannot be called from a script: it changes things; call it directly.", name)
			}
			return Runs, ""
		}
		if v, _ := Gate(tool, env, args, seat.Autonomous, autoApprove); v != Run {
			return Refused, fmt.Sprintf("STOP: %s needs the owner's approval and a script never waits for one. Call %s directly.", name, name)
		}
		return Runs, ""
	}
	switch v, reason := Gate(tool, env, args, seat.Autonomous, autoApprove); {
	case v == AskOwner && (seat.Child || seat.Member):
		return Runs, "" // the question goes back to the delegating agent, or the lead
	case v == AskOwner:
		return AsksOwner, ""
	case v == Ask:
		return Asks, reason
	}
	return Runs, ""
}

// GateTable is the table docs/security.md carries: one row per tool (by
// name), one column per seat, each cell SeatGate's answer for a plain call
// (no arguments, no auto_approve). A tool with per-call rules says so: "+
// ask_when" (some calls ask, even where it runs), "+ allow_when" (some
// calls are routine and run, even where it asks).
func GateTable(list []tools.Tool) string {
	list = slices.Clone(list)
	slices.SortFunc(list, func(a, b tools.Tool) int { return strings.Compare(a.Def().Name, b.Def().Name) })
	var b strings.Builder
	b.WriteString("| tool |")
	for _, s := range Seats {
		b.WriteString(" " + s.Name + " |")
	}
	b.WriteString("\n|---|")
	for range Seats {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, tool := range list {
		fmt.Fprintf(&b, "| `%s` |", tool.Def().Name)
		for _, s := range Seats {
			d, _ := SeatGate(tool, s, tools.Env{Canvas: tools.CanvasTurn{Channel: s.Channel}}, nil, nil)
			cell := string(d)
			if d == Runs || d == Asks {
				// An MCP tool's ask reason is the server's, not the call's.
				// In a gated script a call with an ask reason stops the script.
				if tools.HasAsker(tool) && d == Runs && s.Script != "read" && !strings.HasPrefix(tool.Def().Name, mcpPrefix) {
					cell += " + ask_when"
				}
				if tools.HasAllower(tool) && d == Asks {
					cell += " + allow_when"
				}
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}
