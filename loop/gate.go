package loop

import (
	"encoding/json"
	"slices"

	"github.com/my-agent-crew/crew/tools"
)

// Verdict is the gate's answer for one tool call.
type Verdict int

const (
	Run      Verdict = iota // run it now
	Ask                     // create an approval and pause the turn
	AskOwner                // the call is a question: record it and pause the turn
)

// Gate decides one call, in the seed's fixed order (000 §5, R-GATE-4),
// enforced here and nowhere else. The pipeline (call.go) asks it once per
// new call, after the call was vetted: a call refused anyway never asks.
//
//  1. ask_user always asks: the call is the question, and the turn pauses
//     until it is answered or expires (its traits say so; it needs no
//     approval of its own);
//  2. a call with an ask reason asks, even in an autonomous conversation;
//  3. a routine call (allow_when) runs, even in a supervised one;
//  4. the rest: tools that need no approval run; the others run when the
//     conversation is autonomous or the tool is in its auto_approve; else ask.
func Gate(tool tools.Tool, env tools.Env, args json.RawMessage, autonomous bool, autoApprove []string) (Verdict, string) {
	if traitsOf(tool).asks {
		return AskOwner, ""
	}
	if reason := tools.AskReason(tool, env, args); reason != "" {
		return Ask, reason
	}
	if tools.Routine(tool, env, args) || !tools.NeedsApproval(tool) {
		return Run, ""
	}
	if autonomous || slices.Contains(autoApprove, tool.Def().Name) {
		return Run, ""
	}
	return Ask, ""
}
