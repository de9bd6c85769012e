package telegram

import (
	"testing"

	"github.com/my-agent-crew/crew/loop"
)

// Issue 27: /stop's reply says what was stopped, background tasks too (a
// conversation with only a background task running is stopped, not
// "nothing running").
func TestStopTextSaysWhatWasStopped(t *testing.T) {
	for _, tt := range []struct {
		got   loop.Stopped
		spend string
		want  string
	}{
		{loop.Stopped{RunID: "r1"}, "$0.0100", "Stopped the running turn. Spend so far: $0.0100."},
		{loop.Stopped{Tasks: []string{"bg-1"}}, "", "Stopped: killed 1 background task."},
		{loop.Stopped{RunID: "r1", Dropped: 2, Tasks: []string{"bg-1", "bg-2"}}, "",
			"Stopped the running turn and dropped 2 waiting messages and killed 2 background tasks."},
	} {
		if got := StopText(tt.got, tt.spend); got != tt.want {
			t.Errorf("StopText(%+v) = %q, want %q", tt.got, got, tt.want)
		}
	}
}
