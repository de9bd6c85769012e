package projections

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// RunRunning is the status of a run started and not finished; the others
// are events.RunDone, events.RunHalted and events.RunFailed.
const RunRunning = "running"

// Bounds of the text kept per step; the log keeps the whole of it.
const (
	modelTextRunes = 400
	toolArgsRunes  = 300
	toolOutRunes   = 400
)

// maxChildDepth bounds how deep GetRun and ListRuns nest child runs.
const maxChildDepth = 8

const (
	bucketRuns         = "runs"                 // run id → Run
	bucketRunsByCnv    = "runs_by_conversation" // conversation \x00 start seq → run id
	bucketRunKids      = "run_children"         // parent run id \x00 start seq → child run id
	bucketOrphans      = "run_orphans"          // seq → Orphan
	bucketRunApprovals = "run_approvals"        // approval id → run id
	bucketRunDelegs    = "run_delegations"      // child conversation → delegation
)

// RunSummary is a run without its steps.
type RunSummary struct {
	RunID        string     `json:"run_id"`
	Conversation string     `json:"conversation"`
	Agent        string     `json:"agent"`
	Trigger      string     `json:"trigger"`
	ParentRunID  string     `json:"parent_run_id,omitempty"`
	Started      time.Time  `json:"started"`
	StartSeq     uint64     `json:"start_seq"`
	Finished     *time.Time `json:"finished,omitempty"`
	Status       string     `json:"status"` // RunRunning, events.RunDone, RunHalted, RunFailed
	Reason       string     `json:"reason,omitempty"`
	Error        string     `json:"error,omitempty"`
	// Resumed counts the restarts that cut the run while it worked and
	// after which it was taken up again (run_resumed).
	Resumed int    `json:"resumed,omitempty"`
	Totals  Totals `json:"totals"`
	// StopRequested is when the owner's stop of the run was stored, and
	// StoppedBy who asked (web, api, telegram, cli); a stopped run's
	// Finished is when it took effect.
	StopRequested *time.Time `json:"stop_requested,omitempty"`
	StoppedBy     string     `json:"stopped_by,omitempty"`
	// Children are the runs this one delegated to, in start order. Filled
	// by GetRun and ListRuns, never stored.
	Children []RunSummary `json:"children,omitempty"`
	// ForkedFrom is the run and step a fork's run was copied from; Forks
	// are the forks made of this run, in the order made (R-X-2).
	ForkedFrom *ForkLink  `json:"forked_from,omitempty"`
	Forks      []ForkLink `json:"forks,omitempty"`
}

// ForkLink is one end of a fork: the run on the other side, its
// conversation, the step forked at and the fork's route.
type ForkLink struct {
	RunID        string `json:"run_id"`
	Conversation string `json:"conversation"`
	Step         int    `json:"step"`
	Route        string `json:"route"`
}

// Totals add up a run's steps.
type Totals struct {
	Steps        int `json:"steps"`
	ModelCalls   int `json:"model_calls"`
	ToolCalls    int `json:"tool_calls"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CostUSD sums the known costs, the delegated child runs' included
	// (DelegatedCostUSD is their part); UnknownCostCalls counts the model
	// calls and delegations whose cost was not known, so a total is never
	// silently low.
	CostUSD          float64 `json:"cost_usd"`
	DelegatedCostUSD float64 `json:"delegated_cost_usd,omitempty"`
	UnknownCostCalls int     `json:"unknown_cost_calls"`
	// CachedInputTokens of InputTokens came from the prompt cache, which
	// saved CacheSavedUSD.
	CachedInputTokens int     `json:"cached_input_tokens,omitempty"`
	CacheSavedUSD     float64 `json:"cache_saved_usd,omitempty"`
}

// Run is a run with its steps in order.
type Run struct {
	RunSummary
	Steps []Step `json:"steps"`
}

// Step is one step of a run: the model call(s) for it (more than one after
// a retry or fallback) and the tool calls they asked for.
type Step struct {
	Step       int         `json:"step"`
	ModelCalls []ModelCall `json:"model_calls,omitempty"`
	ToolCalls  []ToolCall  `json:"tool_calls,omitempty"`
	// Fallbacks are routes that failed before one answered (R-LLM-1).
	Fallbacks []Fallback `json:"fallbacks,omitempty"`
	// Retries are the recoveries of the step's model call, and
	// Compactions what was compacted before it (R-LOOP-7).
	Retries     []Retry      `json:"retries,omitempty"`
	Compactions []Compaction `json:"compactions,omitempty"`
	// Escalated is set when the turn moved to the escalation route here.
	Escalated *Escalation `json:"escalated,omitempty"`
	// Approvals asked at this step, with their decisions.
	Approvals []Approval `json:"approvals,omitempty"`
	// Reminders are the loop guard's reminders; Steers counts the owner's
	// /steer messages taken in at this boundary.
	Reminders []string `json:"reminders,omitempty"`
	Steers    int      `json:"steers,omitempty"`
}

// Fallback is one route_fallback line.
type Fallback struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"` // vision: the call carried an image From cannot see
	Text   string `json:"text,omitempty"`   // shown before the failure: interrupted
}

// Retry is one model_retried line.
type Retry struct {
	Route       string `json:"route"`
	Reason      string `json:"reason"`
	Attempt     int    `json:"attempt"`
	WaitMS      int64  `json:"wait_ms,omitempty"`
	MaxTokens   int    `json:"max_tokens,omitempty"`
	Error       string `json:"error,omitempty"`
	Text        string `json:"text,omitempty"` // cut to 400 runes
	Interrupted bool   `json:"interrupted,omitempty"`
}

// Compaction is one context_compacted line.
type Compaction struct {
	Stage   string `json:"stage"`
	Results int    `json:"results,omitempty"`
	From    int    `json:"from,omitempty"`
	To      int    `json:"to,omitempty"`
	Before  int    `json:"before_tokens"`
	After   int    `json:"after_tokens"`
	Limit   int    `json:"limit_tokens"`
	// Asked: the model asked for it (the compact tool).
	Asked bool `json:"asked,omitempty"`
}

// Escalation is one escalated line.
type Escalation struct {
	Reason string `json:"reason"`
	Route  string `json:"route"`
	Error  string `json:"error,omitempty"`
}

// Approval is an approval asked in a run.
type Approval struct {
	ID       string `json:"id"`
	CallID   string `json:"call_id"`
	Tool     string `json:"tool"`
	Reason   string `json:"reason,omitempty"`
	Decision string `json:"decision,omitempty"` // empty while pending
	Always   bool   `json:"always,omitempty"`
	Channel  string `json:"channel,omitempty"`
}

// ModelCall is one model_called event.
type ModelCall struct {
	Route        string   `json:"route"`
	Model        string   `json:"model"`
	Purpose      string   `json:"purpose,omitempty"` // empty: a turn's step
	InputTokens  int      `json:"input_tokens"`
	OutputTokens int      `json:"output_tokens"`
	CostUSD      *float64 `json:"cost_usd"` // null: unknown
	LatencyMS    int64    `json:"latency_ms"`
	// CachedInputTokens and CacheWriteTokens: the prompt cache read and
	// written; EstimatedTokens the harness's estimate of the request.
	CachedInputTokens int      `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int      `json:"cache_write_tokens,omitempty"`
	EstimatedTokens   int      `json:"estimated_input_tokens,omitempty"`
	Text              string   `json:"text,omitempty"` // cut to 400 runes
	ToolCalls         []string `json:"tool_calls,omitempty"`
	Error             string   `json:"error,omitempty"`
}

// ToolCall is a tool_called event joined with its tool_completed.
type ToolCall struct {
	CallID     string `json:"call_id"`
	Tool       string `json:"tool"`
	Args       string `json:"args,omitempty"`   // cut to 300 runes
	Output     string `json:"output,omitempty"` // cut to 400 runes
	IsError    bool   `json:"is_error,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"` // the tool cut its output
	SpillPath  string `json:"spill_path,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	// Outcome says why the harness answered instead of the tool (denied,
	// expired, max_steps, loop, escalated, interrupted, blocked).
	Outcome string `json:"outcome,omitempty"`
	// Completed is false while the call runs, and forever if the harness
	// stopped during it (it may or may not have run).
	Completed bool `json:"completed"`
	// Delegate is the child a delegate call runs (R-DEL).
	Delegate *DelegateCall `json:"delegate,omitempty"`
	// Nested are a tool_script's calls, each as it finished (R-SCR).
	Nested []Nested `json:"nested,omitempty"`
}

// Nested is one call of a script.
type Nested struct {
	N          int      `json:"n"`
	Kind       string   `json:"kind"`
	Tool       string   `json:"tool"`
	IsError    bool     `json:"is_error,omitempty"`
	Chars      int      `json:"chars"`
	DurationMS int64    `json:"duration_ms"`
	CostUSD    *float64 `json:"cost_usd,omitempty"`
}

// DelegateCall is the child side of a delegate call: its conversation as
// soon as it is opened, its run once started, how it ended once answered.
type DelegateCall struct {
	Agent        string   `json:"agent"`
	Conversation string   `json:"conversation"`
	RunID        string   `json:"run_id,omitempty"`
	Status       string   `json:"status,omitempty"` // empty while the child runs
	CostUSD      *float64 `json:"cost_usd"`         // null: unknown or not yet
	// Run is the child run with its steps. Filled by GetRun, never stored.
	Run *Run `json:"run,omitempty"`
}

// delegation links a child conversation to the call that opened it.
type delegation struct {
	ParentRunID string `json:"parent_run_id"`
	CallID      string `json:"call_id"`
}

// Orphan is a run event naming a run this projection never saw start. It is
// kept, not applied: the log stays the truth, the projection tolerant.
type Orphan struct {
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	Type    string `json:"type"`
	RunID   string `json:"run_id"`
}

// Runs projects run events into Run views, indexed by conversation and by
// parent run.
type Runs struct{}

var _ Projection = Runs{}

func (Runs) Name() string { return "runs" }

// Wants: every conversation event (runs live in conversations).
func (Runs) Wants(kind, _ string) bool { return kind == "conv" }

func (Runs) Buckets() []string {
	return []string{bucketRuns, bucketRunsByCnv, bucketRunKids, bucketOrphans, bucketRunApprovals, bucketRunDelegs}
}

func (Runs) Apply(tx *Tx, env events.Envelope) error {
	scope := events.ScopeOf(env.Subject)
	if scope.Kind() != "conv" || scope.ID() == "" {
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	runs := tx.Bucket([]byte(bucketRuns))
	switch e := e.(type) {
	case *events.RunStarted:
		return startRun(tx, runs, scope.ID(), env, e)
	case *events.ConversationOpened:
		return openDelegation(tx, runs, scope.ID(), e)
	}
	runID, inRun := events.RunOf(e)
	switch e := e.(type) {
	case *events.HookRan:
		return nil // not part of the run's view
	case *events.ApprovalRequested:
		if err := tx.Bucket([]byte(bucketRunApprovals)).Put([]byte(e.ApprovalID), []byte(e.RunID)); err != nil {
			return err
		}
	case *events.ApprovalDecided:
		v := tx.Bucket([]byte(bucketRunApprovals)).Get([]byte(e.ApprovalID))
		if v == nil {
			o := Orphan{Seq: env.Seq, Subject: env.Subject, Type: env.Type}
			return tx.putJSON(tx.Bucket([]byte(bucketOrphans)), u64(env.Seq), o)
		}
		runID, inRun = string(v), true
	}
	if !inRun {
		return nil
	}
	var r Run
	found, err := tx.getJSON(runs, []byte(runID), &r)
	if err != nil {
		return err
	}
	if !found {
		o := Orphan{Seq: env.Seq, Subject: env.Subject, Type: env.Type, RunID: runID}
		return tx.putJSON(tx.Bucket([]byte(bucketOrphans)), u64(env.Seq), o)
	}
	switch e := e.(type) {
	case *events.ModelCalled:
		mc := ModelCall{
			Route: e.Route, Model: e.Model, Purpose: e.Purpose,
			InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
			CostUSD: e.CostUSD, LatencyMS: e.LatencyMS,
			CachedInputTokens: e.CachedInputTokens, CacheWriteTokens: e.CacheWriteTokens, EstimatedTokens: e.EstimatedTokens,
			Text: truncate(e.Text, modelTextRunes), Error: e.Error,
		}
		for _, tc := range e.ToolCalls {
			mc.ToolCalls = append(mc.ToolCalls, tc.Name)
		}
		s := r.step(e.Step)
		s.ModelCalls = append(s.ModelCalls, mc)
		r.Totals.ModelCalls++
		r.Totals.InputTokens += e.InputTokens
		r.Totals.OutputTokens += e.OutputTokens
		r.Totals.CachedInputTokens += e.CachedInputTokens
		if e.CacheSavedUSD != nil {
			r.Totals.CacheSavedUSD += *e.CacheSavedUSD
		}
		if e.CostUSD != nil {
			r.Totals.CostUSD += *e.CostUSD
		} else if e.Error == "" { // a failed call cost nothing we know of
			r.Totals.UnknownCostCalls++
		}
	case *events.ToolCalled:
		tc := r.toolCall(e.Step, e.CallID)
		tc.Tool, tc.Args = e.Tool, truncate(string(e.Arguments), toolArgsRunes)
	case *events.NestedCall:
		tc := r.toolCall(e.Step, e.CallID)
		// Stored as each call ends, listed in the order the script wrote them.
		n := Nested{N: e.N, Kind: e.Kind, Tool: e.Tool, IsError: e.IsError, Chars: e.Chars, DurationMS: e.DurationMS, CostUSD: e.CostUSD}
		i, _ := slices.BinarySearchFunc(tc.Nested, n.N, func(x Nested, k int) int { return cmp.Compare(x.N, k) })
		tc.Nested = slices.Insert(tc.Nested, i, n)
	case *events.ToolCompleted:
		tc := r.toolCall(e.Step, e.CallID)
		tc.Tool, tc.Output, tc.IsError = e.Tool, truncate(e.Output, toolOutRunes), e.IsError
		tc.Truncated, tc.SpillPath, tc.DurationMS, tc.Completed = e.Truncated, e.SpillPath, e.DurationMS, true
		tc.Outcome = e.Outcome
		if d := e.Delegate; d != nil {
			tc.Delegate = &DelegateCall{Agent: d.Agent, Conversation: d.Conversation, RunID: d.RunID, Status: d.Status, CostUSD: d.CostUSD}
			usd, unknown := d.Spent()
			r.Totals.CostUSD += usd
			r.Totals.DelegatedCostUSD += usd
			r.Totals.UnknownCostCalls += unknown
		}
	case *events.RouteFallback:
		st := r.step(e.Step)
		st.Fallbacks = append(st.Fallbacks, Fallback{From: e.From, To: e.To, Reason: e.Reason, Error: truncate(e.Error, modelTextRunes), Text: truncate(e.Text, modelTextRunes)})
	case *events.ModelRetried:
		st := r.step(e.Step)
		st.Retries = append(st.Retries, Retry{Route: e.Route, Reason: e.Reason, Attempt: e.Attempt, WaitMS: e.WaitMS, MaxTokens: e.MaxTokens,
			Error: truncate(e.Error, modelTextRunes), Text: truncate(e.Text, modelTextRunes), Interrupted: e.Interrupted})
		r.Totals.InputTokens += e.InputTokens
		r.Totals.OutputTokens += e.OutputTokens
		if e.CostUSD != nil {
			r.Totals.CostUSD += *e.CostUSD
		} else if e.OutputTokens > 0 {
			r.Totals.UnknownCostCalls++
		}
	case *events.ContextCompacted:
		st := r.step(e.Step)
		st.Compactions = append(st.Compactions, Compaction{Stage: e.Stage, Results: len(e.Results), From: e.From, To: e.To, Before: e.Before, After: e.After, Limit: e.Limit, Asked: e.CallID != ""})
	case *events.Escalated:
		r.step(e.Step).Escalated = &Escalation{Reason: e.Reason, Route: e.Route, Error: truncate(e.Error, modelTextRunes)}
	case *events.GuardReminded:
		st := r.step(e.Step)
		st.Reminders = append(st.Reminders, e.Text)
	case *events.SteersApplied:
		r.step(max(e.Step, 1)).Steers += len(e.SteerIDs)
	case *events.RunResumed:
		r.Resumed++
	case *events.ApprovalRequested:
		st := r.step(e.Step)
		st.Approvals = append(st.Approvals, Approval{ID: e.ApprovalID, CallID: e.CallID, Tool: e.Tool, Reason: e.Reason})
	case *events.ApprovalDecided:
		for i := range r.Steps {
			for j := range r.Steps[i].Approvals {
				if a := &r.Steps[i].Approvals[j]; a.ID == e.ApprovalID {
					a.Decision, a.Always, a.Channel = e.Decision, e.Always, e.Channel
				}
			}
		}
	case *events.RunStopRequested:
		if r.StopRequested == nil {
			t := env.Time
			r.StopRequested, r.StoppedBy = &t, e.By
		}
	case *events.RunFinished:
		t := env.Time
		r.Finished, r.Status, r.Reason, r.Error = &t, e.Status, e.Reason, e.Error
		if e.By != "" {
			r.StoppedBy = e.By
		}
	case *events.ConversationForked:
		r.ForkedFrom = &ForkLink{RunID: e.From.RunID, Conversation: e.From.Conversation, Step: e.From.Step, Route: e.Route}
		if err := linkFork(tx, runs, scope.ID(), e); err != nil {
			return err
		}
	}
	r.Totals.Steps = len(r.Steps)
	return tx.putJSON(runs, []byte(runID), r)
}

func startRun(tx *Tx, runs *bbolt.Bucket, conv string, env events.Envelope, e *events.RunStarted) error {
	var r Run
	found, err := tx.getJSON(runs, []byte(e.RunID), &r)
	if err != nil {
		return err
	}
	if found {
		// The same run started again (a resume): it runs again, keeping
		// its steps and its place in the indexes.
		r.Status, r.Finished, r.Reason, r.Error = RunRunning, nil, "", ""
		return tx.putJSON(runs, []byte(e.RunID), r)
	}
	r = Run{
		RunSummary: RunSummary{
			RunID: e.RunID, Conversation: conv, Agent: e.Agent, Trigger: e.Trigger,
			ParentRunID: e.ParentRunID, Started: env.Time, StartSeq: env.Seq, Status: RunRunning,
		},
		Steps: []Step{},
	}
	if err := tx.putJSON(runs, []byte(e.RunID), r); err != nil {
		return err
	}
	if err := tx.Bucket([]byte(bucketRunsByCnv)).Put(seqKey(conv, env.Seq), []byte(e.RunID)); err != nil {
		return err
	}
	if e.ParentRunID == "" {
		return nil
	}
	if err := tx.Bucket([]byte(bucketRunKids)).Put(seqKey(e.ParentRunID, env.Seq), []byte(e.RunID)); err != nil {
		return err
	}
	// The delegate call that opened this conversation now has its run.
	var d delegation
	found, err = tx.getJSON(tx.Bucket([]byte(bucketRunDelegs)), []byte(conv), &d)
	if err != nil || !found || d.ParentRunID != e.ParentRunID {
		return err
	}
	var parent Run
	if found, err = tx.getJSON(runs, []byte(d.ParentRunID), &parent); err != nil || !found {
		return err
	}
	tc := parent.findCall(d.CallID)
	if tc == nil || tc.Delegate == nil || tc.Delegate.RunID != "" {
		return nil
	}
	tc.Delegate.RunID = e.RunID
	return tx.putJSON(runs, []byte(d.ParentRunID), parent)
}

// linkFork lists a fork on the run it was copied from (nothing when that
// run is unknown here).
func linkFork(tx *Tx, runs *bbolt.Bucket, conv string, e *events.ConversationForked) error {
	var origin Run
	found, err := tx.getJSON(runs, []byte(e.From.RunID), &origin)
	if err != nil || !found {
		return err
	}
	origin.Forks = append(origin.Forks, ForkLink{RunID: e.RunID, Conversation: conv, Step: e.From.Step, Route: e.Route})
	return tx.putJSON(runs, []byte(e.From.RunID), origin)
}

// openDelegation links a delegated child conversation to the parent run's
// delegate call, before the child's run starts.
func openDelegation(tx *Tx, runs *bbolt.Bucket, conv string, e *events.ConversationOpened) error {
	if e.ParentRunID == "" || e.ParentCallID == "" {
		return nil
	}
	if err := tx.putJSON(tx.Bucket([]byte(bucketRunDelegs)), []byte(conv), delegation{ParentRunID: e.ParentRunID, CallID: e.ParentCallID}); err != nil {
		return err
	}
	var parent Run
	found, err := tx.getJSON(runs, []byte(e.ParentRunID), &parent)
	if err != nil || !found {
		return err
	}
	tc := parent.findCall(e.ParentCallID)
	if tc == nil {
		last := 0
		if n := len(parent.Steps); n > 0 {
			last = parent.Steps[n-1].Step
		}
		tc = parent.toolCall(last, e.ParentCallID)
		tc.Tool = "delegate"
		parent.Totals.Steps = len(parent.Steps)
	}
	if tc.Delegate == nil {
		tc.Delegate = &DelegateCall{Agent: e.Agent, Conversation: conv}
	}
	return tx.putJSON(runs, []byte(e.ParentRunID), parent)
}

// findCall returns the tool call callID of any step, or nil.
func (r *Run) findCall(callID string) *ToolCall {
	for i := len(r.Steps) - 1; i >= 0; i-- {
		for j := range r.Steps[i].ToolCalls {
			if r.Steps[i].ToolCalls[j].CallID == callID {
				return &r.Steps[i].ToolCalls[j]
			}
		}
	}
	return nil
}

// step returns the step numbered n, appending it if new. Steps stay in the
// order they were first seen.
func (r *Run) step(n int) *Step {
	for i := len(r.Steps) - 1; i >= 0; i-- {
		if r.Steps[i].Step == n {
			return &r.Steps[i]
		}
	}
	r.Steps = append(r.Steps, Step{Step: n})
	return &r.Steps[len(r.Steps)-1]
}

// toolCall returns the call callID of any step, else a new one in step n.
func (r *Run) toolCall(n int, callID string) *ToolCall {
	if tc := r.findCall(callID); tc != nil {
		return tc
	}
	s := r.step(n)
	s.ToolCalls = append(s.ToolCalls, ToolCall{CallID: callID})
	r.Totals.ToolCalls++
	return &s.ToolCalls[len(s.ToolCalls)-1]
}

// GetRun returns run id with its steps and child runs, or ErrNotFound.
func GetRun(db *bbolt.DB, id string) (Run, error) {
	var r Run
	err := db.View(func(tx *bbolt.Tx) (err error) {
		if r, err = getTx[Run](&Tx{Tx: tx}, bucketRuns, id); err != nil {
			return err
		}
		r.Children, err = children(tx, id, 1)
		if err != nil {
			return err
		}
		return nestDelegates(tx, &r, 1)
	})
	if err != nil {
		return Run{}, fmt.Errorf("get run %s: %w", id, err)
	}
	return r, nil
}

// FreshRuns finds runs for a caller that has just written (loop.ForkRuns):
// it reads them once the projections have applied all the log held.
type FreshRuns struct {
	Log   *events.Log
	DB    *bbolt.DB
	Fresh Freshness
}

// RunConversation is run id's conversation and that conversation's title
// ("" when untitled); ok false: no such run.
func (r FreshRuns) RunConversation(ctx context.Context, id string) (conversation, title string, ok bool, err error) {
	if err := ReadYourWrites(ctx, r.Log, r.Fresh); err != nil {
		return "", "", false, err
	}
	run, err := GetRun(r.DB, id)
	if errors.Is(err, ErrNotFound) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	if c, err := GetConversation(r.DB, run.Conversation); err == nil {
		title = c.Title
	}
	return run.Conversation, title, true, nil
}

// RunEnded is run id's status, reason and steps once the projections have
// applied what the log holds.
func (r FreshRuns) RunEnded(ctx context.Context, id string) (status, reason string, steps int, err error) {
	if err := ReadYourWrites(ctx, r.Log, r.Fresh); err != nil {
		return "", "", 0, err
	}
	run, err := GetRun(r.DB, id)
	if err != nil {
		return "", "", 0, err
	}
	return run.Status, run.Reason, run.Totals.Steps, nil
}

// nestDelegates puts each delegate call's child run, with its steps, under
// the call, up to maxChildDepth.
func nestDelegates(tx *bbolt.Tx, r *Run, depth int) error {
	if depth > maxChildDepth {
		return nil
	}
	runs := tx.Bucket([]byte(bucketRuns))
	for i := range r.Steps {
		for j := range r.Steps[i].ToolCalls {
			d := r.Steps[i].ToolCalls[j].Delegate
			if d == nil || d.RunID == "" {
				continue
			}
			var child Run
			found, err := getJSON(runs, []byte(d.RunID), &child)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			if child.Children, err = children(tx, child.RunID, depth+1); err != nil {
				return err
			}
			if err := nestDelegates(tx, &child, depth+1); err != nil {
				return err
			}
			d.Run = &child
		}
	}
	return nil
}

// ListRuns returns the runs of conversation in start order, each child run
// nested under its parent rather than listed beside it. A child run whose
// parent is in another conversation (a delegation) is listed here and under
// its parent there.
func ListRuns(db *bbolt.DB, conversation string) ([]RunSummary, error) {
	var out []RunSummary
	err := db.View(func(tx *bbolt.Tx) error {
		index, runs := tx.Bucket([]byte(bucketRunsByCnv)), tx.Bucket([]byte(bucketRuns))
		if index == nil {
			return nil
		}
		prefix := seqPrefix(conversation)
		cur := index.Cursor()
		for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
			s, err := summary(runs, v)
			if err != nil {
				return err
			}
			if s.ParentRunID != "" {
				var parent Run
				found, err := getJSON(runs, []byte(s.ParentRunID), &parent)
				if err != nil {
					return err
				}
				if found && parent.Conversation == conversation {
					continue
				}
			}
			if s.Children, err = children(tx, s.RunID, 1); err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", conversation, err)
	}
	return out, nil
}

// children returns the child runs of parent, nested up to maxChildDepth.
func children(tx *bbolt.Tx, parent string, depth int) ([]RunSummary, error) {
	index, runs := tx.Bucket([]byte(bucketRunKids)), tx.Bucket([]byte(bucketRuns))
	if index == nil || depth > maxChildDepth {
		return nil, nil
	}
	var out []RunSummary
	prefix := seqPrefix(parent)
	cur := index.Cursor()
	for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
		s, err := summary(runs, v)
		if err != nil {
			return nil, err
		}
		if s.Children, err = children(tx, s.RunID, depth+1); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func summary(runs *bbolt.Bucket, id []byte) (RunSummary, error) {
	var r Run
	found, err := getJSON(runs, id, &r)
	if err != nil {
		return RunSummary{}, err
	}
	if !found {
		return RunSummary{}, fmt.Errorf("index names missing run %q", id)
	}
	return r.RunSummary, nil
}

// Orphans returns the run events that named an unknown run, in stream
// order.
func Orphans(db *bbolt.DB) ([]Orphan, error) {
	var out []Orphan
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketOrphans))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var o Orphan
			if _, err := getJSON(b, k, &o); err != nil {
				return err
			}
			out = append(out, o)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list orphan run events: %w", err)
	}
	return out, nil
}
