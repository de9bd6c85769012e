package app

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-TEAM, R-ES-8: two crew processes on a 3-node cluster; only the one
// holding the leader lease runs the team runtime's passes (a kick on the
// standby runs nothing), and when the leader goes the standby takes the
// lease and runs them.
func TestTeamRuntimeRunsOnlyOnTheLeader(t *testing.T) {
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
		if err := a.RunSingletons(t.Context(), "", io.Discard); err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := open("a")
	closed := false
	defer func() {
		if !closed {
			a.Close()
		}
	}()
	eventstest.EventuallyWithin(t, 30*time.Second, "a to lead and run the teams", a.wiring.Teams.Running)
	b := open("b")
	defer b.Close()
	// While a leads, b never runs them: its lead loop asks every second.
	for range 25 {
		if b.wiring.Teams.Running() {
			t.Fatal("the standby runs the team passes while another process leads")
		}
		b.wiring.Teams.Kick("web-20261202")
		if !b.wiring.Teams.Idle() {
			t.Fatal("a kick on the standby started a team pass")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !a.wiring.Teams.Running() {
		t.Fatal("the leader stopped running the team passes")
	}
	a.Close() // the leader goes: its lease is given back
	closed = true
	eventstest.EventuallyWithin(t, 30*time.Second, "b to take the lead and run the teams", b.wiring.Teams.Running)
	if a.wiring.Teams.Running() {
		t.Error("the closed process still runs the team passes")
	}
}
