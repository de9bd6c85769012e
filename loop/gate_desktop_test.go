package loop_test

import (
	"encoding/json"
	"testing"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/desktop"
)

// TestComputerActAsksEvenWhenAutonomousThroughTheGate (R-GATE-4, R-DSK):
// through the one gate, computer_act's ask rules ask in an autonomous
// conversation too; a plain edit runs there and asks in a supervised one;
// a call certain to be refused is routine, so its refusal is not asked.
func TestComputerActAsksEvenWhenAutonomousThroughTheGate(t *testing.T) {
	var act tools.Tool
	for _, tl := range desktop.Tools() {
		if tl.Def().Name == desktop.ActTool {
			act = tl
		}
	}
	env := tools.Env{Conversation: "c1", Agent: tools.AgentPolicy{ComputerApps: []string{"gedit"}}}
	for _, c := range []struct {
		args       string
		autonomous bool
		want       loop.Verdict
	}{
		{`{"action":"front","frame_id":"f1","app":"gedit"}`, true, loop.Ask},
		{`{"action":"click","frame_id":"f1","x":5,"y":5}`, true, loop.Ask},
		{`{"action":"key","frame_id":"f1","keys":"Return"}`, true, loop.Ask},
		{`{"action":"type","frame_id":"f1","text":"gửi ngay"}`, true, loop.Ask},
		{`{"action":"key","frame_id":"f1","keys":"ctrl+a"}`, true, loop.Run},
		{`{"action":"key","frame_id":"f1","keys":"ctrl+a"}`, false, loop.Ask},
		{`{"action":"type","frame_id":"f1","text":"sudo reboot"}`, false, loop.Run}, // refused anyway: vetted before, never asked
	} {
		if got, reason := loop.Gate(act, env, json.RawMessage(c.args), c.autonomous, nil); got != c.want {
			t.Errorf("%s autonomous=%v: %v (%q), want %v", c.args, c.autonomous, got, reason, c.want)
		}
	}
}
