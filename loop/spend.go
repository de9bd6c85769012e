package loop

import "github.com/my-agent-crew/crew/events"

// Spend is the budget fold: CostUSD sums known model costs, a delegated
// child's and a script's delegations included; UnknownCostCalls counts
// successful calls whose cost was not reported (never counted as zero).
type Spend struct {
	CostUSD          float64 `json:"cost_usd"`
	UnknownCostCalls int     `json:"unknown_cost_calls"`
}

func (f *Spend) apply(env events.Envelope, _ foldOn) {
	switch e := decoded(env).(type) {
	case *events.ModelCalled: // the harness's own calls count too
		if e.CostUSD != nil {
			f.CostUSD += *e.CostUSD
		} else if e.Error == "" {
			f.UnknownCostCalls++
		}
	case *events.ModelRetried: // a reply cut at its limit cost what it cost
		if e.CostUSD != nil {
			f.CostUSD += *e.CostUSD
		} else if e.OutputTokens > 0 {
			f.UnknownCostCalls++
		}
	case *events.ToolCompleted:
		f.child(e.Delegate)
	case *events.NestedCall:
		f.child(e.Delegate)
	}
}

// child adds a delegated child's spending: the child's is the parent's.
func (f *Spend) child(d *events.DelegateResult) {
	if d != nil {
		usd, unknown := d.Spent()
		f.CostUSD += usd
		f.UnknownCostCalls += unknown
	}
}
