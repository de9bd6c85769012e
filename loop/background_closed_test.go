package loop_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/shell"
)

// A background task that ends after its conversation was closed (the
// owner's /new, the day's end) has its end stored: the task list shows it
// ended with its exit code, and a stop of one stopping shows it stopped.
// The closed conversation stays closed: nothing queued, no turn due, no
// round opened, as for any other event it gets.
func TestBackgroundTaskEndsInAClosedConversation(t *testing.T) {
	h := newHarness(t, nil)
	bg := h.background()
	defer bg.Close()
	h.send("hello")
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	script := "while [ ! -e " + gate + " ]; do sleep 0.02; done; echo done-marker; exit 3"
	ended, err := bg.Start(tools.Env{Conversation: h.conv, CallID: "call-1", RunID: "run-1"}, shell.Command{Script: script, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := bg.Start(tools.Env{Conversation: h.conv, CallID: "call-2", RunID: "run-1"}, shell.Command{Script: "sleep 300", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	h.turn() // the message's round, so nothing but the tasks is left
	runs := len(eventsOf[*events.RunStarted](h.events()))
	h.append(&events.ConversationClosed{Reason: "owner"})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bg.StopTask(t.Context(), h.conv, stopped, events.StopByAPI); err != nil {
		t.Fatalf("stop in a closed conversation: %v", err)
	}
	eventstest.Eventually(t, "both commands gone", func() bool { return bg.Listed() == 0 })
	bg.Close() // waits until each end is stored, or refused
	list, err := bg.Tasks(t.Context(), h.conv)
	if err != nil || len(list) != 2 {
		t.Fatalf("tasks = %+v, %v", list, err)
	}
	byID := map[string]loop.TaskView{list[0].ID: list[0], list[1].ID: list[1]}
	if v := byID[ended]; v.State != loop.TaskExited || v.ExitCode == nil || *v.ExitCode != 3 {
		t.Errorf("the task that exited 3 is listed %+v", v)
	}
	if v := byID[stopped]; v.State != loop.TaskStopped || v.StoppedBy != events.StopByAPI {
		t.Errorf("the stopped task is listed %+v", v)
	}
	st := h.state()
	if !st.Closed || len(st.Queued) != 0 || st.NeedsTurn() || st.OpenRun != "" {
		t.Errorf("the closed conversation changed: closed %v, queued %d, needs a turn %v, open run %q", st.Closed, len(st.Queued), st.NeedsTurn(), st.OpenRun)
	}
	h.turn()
	if n := len(eventsOf[*events.RunStarted](h.events())); n != runs {
		t.Errorf("%d runs started after the close, want none", n-runs)
	}
}
