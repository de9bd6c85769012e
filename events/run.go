package events

// inRun is a payload that belongs to one run.
type inRun interface{ runOf() string }

// RunOf returns the run an event belongs to, for the payloads that carry a
// RunID (ApprovalDecided does not: find it through its approval; a
// ModelCalled of the harness's own, such as a summary, may have none).
func RunOf(e Event) (string, bool) {
	r, ok := e.(inRun)
	if !ok || r.runOf() == "" { // a harness model call outside any run
		return "", false
	}
	return r.runOf(), true
}

func (e *RunStarted) runOf() string        { return e.RunID }
func (e *ModelCalled) runOf() string       { return e.RunID }
func (e *ToolCalled) runOf() string        { return e.RunID }
func (e *ToolCompleted) runOf() string     { return e.RunID }
func (e *NestedCall) runOf() string        { return e.RunID }
func (e *RunFinished) runOf() string       { return e.RunID }
func (e *SteersApplied) runOf() string     { return e.RunID }
func (e *GuardReminded) runOf() string     { return e.RunID }
func (e *ApprovalRequested) runOf() string { return e.RunID }
func (e *QuestionAsked) runOf() string     { return e.RunID }
func (e *RouteFallback) runOf() string     { return e.RunID }
func (e *Escalated) runOf() string         { return e.RunID }
func (e *HookRan) runOf() string           { return e.RunID }
func (e *RunResumed) runOf() string        { return e.RunID }
func (e *ArtifactCreated) runOf() string   { return e.RunID }
func (e *ArtifactWritten) runOf() string   { return e.RunID }

// Spent is what a delegated child cost its parent: the dollars known and the
// number of its model calls whose cost is unknown. A result recorded before
// the count existed, without a cost, is one unknown call. Every fold of
// costs (the loop's state, the runs projection) counts it this way.
func (d *DelegateResult) Spent() (usd float64, unknownCalls int) {
	if d.CostUSD != nil {
		usd = *d.CostUSD
	}
	unknownCalls = d.UnknownCostCalls
	if d.CostUSD == nil && d.UnknownCostCalls == 0 {
		unknownCalls++
	}
	return usd, unknownCalls
}
