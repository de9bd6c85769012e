package home

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/my-agent-crew/crew/loop/budget"
)

// The budgets the ledger enforces are config.yaml's budget: block and
// each agent's daily_cap_usd; an agent without one has no cap of its own.
func TestCapsAreConfigBudgetAndAgentDailyCaps(t *testing.T) {
	dir := newHome(t)
	writeFile(t, filepath.Join(dir, "config.yaml"), "budget: {daily_usd: 2.5, unknown_call_usd: 0.1}\n")
	writeFile(t, filepath.Join(dir, "agents", "pong", "agent.yaml"), "name: Pong\ndaily_cap_usd: 0.75\n")
	writeFile(t, filepath.Join(dir, "agents", "ping", "agent.yaml"), "name: Ping\n")
	want := budget.Caps{DailyUSD: 2.5, UnknownCallUSD: 0.1, AgentDailyUSD: map[string]float64{"pong": 0.75}}
	if got := mustLoad(t, dir).Caps(); !reflect.DeepEqual(got, want) {
		t.Errorf("Caps = %+v, want %+v", got, want)
	}
}
