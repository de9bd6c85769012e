package app

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/shell"
)

// A serve that starts on a cluster while a peer runs a background task
// leaves that task alone: its start without an end is a live holder's,
// not one a crash left (two real Apps on a 3-node cluster).
func TestServeOnAClusterLeavesAPeersRunningTaskAlone(t *testing.T) {
	c := eventstest.StartCluster(t, 3)
	open := func(name string) *App {
		dir := filepath.Join(t.TempDir(), name)
		if _, err := home.Init(dir); err != nil {
			t.Fatal(err)
		}
		h, err := home.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		h.Config.NATS.URL = c.URL()
		getenv := func(k string) string {
			if k == "MY_AGENT_ROUTES" {
				return "fake:echo"
			}
			return ""
		}
		a, err := Open(t.Context(), dir, h, Options{Serve: true, Listen: "127.0.0.1:0", As: "serve", Getenv: getenv})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		if err := a.RunSingletons(t.Context(), "", io.Discard); err != nil {
			t.Fatal(err)
		}
		select {
		case <-a.Worker.Recovered():
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: no recovery within 60 s", name)
		}
		return a
	}
	a := open("a")
	id, err := a.wiring.background.Start(tools.Env{Conversation: "c1", CallID: "call-1", RunID: "run-1"}, shell.Command{Script: "sleep 300", Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	open("b") // its recovery has run, after it read a's task_started
	ends, err := a.Log().ReadAll(t.Context(), events.Conv("c1").Subject(events.TypeTaskNotification), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ends) != 0 {
		d, _ := ends[0].Decode()
		t.Fatalf("b ended a's running task %s: %+v", id, d)
	}
}
