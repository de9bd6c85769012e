package loop

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/my-agent-crew/crew/events"
)

// Loop guard (R-LOOP-3, seed 000 §2.3): a cheap model stuck on one broken
// call may repeat it until max_steps. The guard reads one model call's tool
// calls as a signature — names plus canonical arguments, ignoring call ids
// and the order of parallel calls — and counts identical consecutive
// signatures. On the 3rd the model is reminded; three more identical calls
// halt the turn (or escalate it). Only consecutive replies of one run count:
// a reply with no tools, a steer, an escalation and a new run reset it.

// Guard thresholds: the reminder at guardRemindAt (guard_remind.go),
// the halt three repeats later.
const guardHaltAt = guardRemindAt + 3

// guardExempt tools never count: they are how a model reports progress or
// asks the owner, not work that can loop.
var guardExempt = map[string]bool{ProgressNoteTool: true, AskUserTool: true}

// GuardVerdict is what the guard says about one model call's tool calls.
type GuardVerdict int

const (
	GuardContinue GuardVerdict = iota
	GuardRemind                // run the calls, then add the reminder
	GuardHalt                  // do not run the calls: halt (or escalate)
)

// Guard counts identical consecutive tool-call signatures within a run.
// It is part of State, folded from the run's recorded replies, steers and
// escalation, so a turn resumed after a restart or an approval counts on
// where it was (R-ES-1: nothing lives only in memory).
type Guard struct {
	Sig      string `json:"sig,omitempty"`      // the repeated signature
	Repeats  int    `json:"repeats,omitempty"`  // how many times in a row
	Names    string `json:"names,omitempty"`    // its tool names, for the reminder
	Reminded bool   `json:"reminded,omitempty"` // the reminder for this count was given
}

// Observe records one model call's tool calls. A call with no tools resets
// the count; a call with only exempt tools neither counts nor resets.
func (g *Guard) Observe(calls []events.ToolCallRequest) GuardVerdict {
	if len(calls) == 0 {
		g.Reset()
		return GuardContinue
	}
	sig, names := signature(calls)
	if sig == "" {
		return GuardContinue
	}
	if sig == g.Sig {
		g.Repeats++
	} else {
		g.Sig, g.Repeats, g.Names = sig, 1, names
	}
	g.Reminded = false
	return g.Verdict()
}

// Verdict is what the guard says about the last observed reply: halt (its
// calls are not run), remind (after its calls ran, until the reminder is
// given) or continue.
func (g *Guard) Verdict() GuardVerdict {
	switch {
	case g.Repeats >= guardHaltAt:
		return GuardHalt
	case g.Repeats == guardRemindAt && !g.Reminded:
		return GuardRemind
	}
	return GuardContinue
}

// Reset forgets the count: a new run, a steer, an escalation.
func (g *Guard) Reset() { *g = Guard{} }

// Count and Tools describe the current repetition, for the reminder.
func (g *Guard) Count() int    { return g.Repeats }
func (g *Guard) Tools() string { return g.Names }

// Reminder is the user-role text: it names only the tool and the count,
// never arguments or results — web and file data must never become the
// owner's words.
func (g *Guard) Reminder() string {
	return fmt.Sprintf("[Harness reminder] You have made the same %s call %d times in a row and it has not moved the task forward. Do not repeat it: try a different approach, or stop and tell the owner what is blocking you.", g.Names, g.Repeats)
}

func signature(calls []events.ToolCallRequest) (sig, names string) {
	var parts []string
	nameSet := map[string]bool{}
	for _, c := range calls {
		if guardExempt[c.Name] {
			continue
		}
		parts = append(parts, c.Name+"\x00"+canonicalJSON(c.Arguments))
		nameSet[c.Name] = true
	}
	sort.Strings(parts)
	var ns []string
	for n := range nameSet {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return strings.Join(parts, "\x01"), strings.Join(ns, ", ")
}

// canonicalJSON re-encodes arguments with sorted keys and no spacing, so
// {"a":1, "b":2} and {"b":2,"a":1} are the same call.
func canonicalJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// Guarding is the guard fold: the loop guard over the open run's replies
// (R-LOOP-3), and Escalated says the open run has escalated (R-LOOP-4:
// once per run), both folded from the log so a resumed turn decides as an
// uninterrupted one would.
type Guarding struct {
	Guard     Guard `json:"guard"`
	Escalated bool  `json:"escalated,omitempty"`
}

func (f *Guarding) apply(env events.Envelope, on foldOn) {
	switch e := decoded(env).(type) {
	case *events.RunStarted:
		*f = Guarding{}
	case *events.RunFinished:
		if on.end != nil {
			*f = Guarding{}
		}
	case *events.SteersApplied:
		for _, p := range on.steers {
			if !p.Team && applies(e, p) {
				f.Guard.Reset() // the owner's new words: the count starts again
				break
			}
		}
	case *events.ModelCalled:
		if e.InTurn() && e.Error == "" && e.RunID == on.open {
			f.Guard.Observe(e.ToolCalls)
		}
	case *events.GuardReminded:
		if e.RunID == on.open {
			f.Guard.Reminded = true
		}
	case *events.Escalated:
		if e.RunID == on.open {
			f.Escalated = true
			if e.Reason == "loop" { // the repeated calls were refused: count afresh
				f.Guard.Reset()
			}
		}
	}
}
