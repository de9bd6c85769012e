package loop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
)

// oneRun is a ForkRuns that knows one run.
type oneRun struct{ run, conv, title string }

func (r oneRun) RunConversation(_ context.Context, id string) (string, string, bool, error) {
	if id != r.run {
		return "", "", false, nil
	}
	return r.conv, r.title, true, nil
}

// routesOf calls only the routes it lists.
type routesOf []string

func (r routesOf) Model(route llm.Route) (llm.Model, error) {
	if !slices.Contains(r, route.String()) {
		return nil, fmt.Errorf("no key for %s", route)
	}
	return nil, nil
}

// ids is a Clock whose ids count up.
type ids struct {
	loop.WallClock
	n *int
}

func (c ids) NewID() string { *c.n++; return fmt.Sprint("id", *c.n) }

// Forker.Fork opens the fork through the conversation's writer (the
// events ForkEvents makes, the title naming the original), copies the
// original's spill folder, kicks the worker for the new conversation and
// says what it made.
func TestForkerForksARunAndKicksTheWorker(t *testing.T) {
	h, run, envs := forkRecording(t)
	home := t.TempDir()
	spilled := filepath.Join(home, "spill", h.conv, "sub", "call1.txt")
	os.MkdirAll(filepath.Dir(spilled), 0o700)
	os.WriteFile(spilled, []byte("the whole output"), 0o600)
	var kicked []string
	f := loop.Forker{Log: h.log, Runs: oneRun{run: run, conv: h.conv, title: "Reading"}, Convs: h.convs, HomeDir: home,
		Routes: routesOf{"fake:echo"}, Kicker: loop.KickFunc(func(c string) { kicked = append(kicked, c) }), Clock: ids{n: new(int)}}

	got, err := f.Fork(t.Context(), run, 2, "fake:echo")
	if err != nil {
		t.Fatal(err)
	}
	want := loop.Forked{Conversation: "fork-id1", RunID: "id2", Route: "fake:echo", From: events.ForkOrigin{Conversation: h.conv, RunID: run, Step: 2}}
	if got != want {
		t.Errorf("forked %+v, want %+v", got, want)
	}
	if !slices.Equal(kicked, []string{"fork-id1"}) {
		t.Errorf("kicked %v, want the fork", kicked)
	}
	if b, err := os.ReadFile(filepath.Join(home, "spill", "fork-id1", "sub", "call1.txt")); err != nil || string(b) != "the whole output" {
		t.Errorf("spill copy: %q, %v", b, err)
	}
	fenvs, err := h.log.ReadAll(t.Context(), events.Conv("fork-id1").Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	wantEvs, err := loop.ForkEvents(envs, run, 2, loop.ForkSpec{Conversation: "fork-id1", RunID: "id2", Route: "fake:echo", Title: "Fork of Reading at step 2 on fake:echo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fenvs) != len(wantEvs) {
		t.Fatalf("the fork holds %d events, want %d", len(fenvs), len(wantEvs))
	}
	for i, env := range fenvs {
		if env.Type != wantEvs[i].EventType() {
			t.Errorf("event %d is %s, want %s", i, env.Type, wantEvs[i].EventType())
		}
	}
	opened, _ := fenvs[0].Decode()
	if o, ok := opened.(*events.ConversationOpened); !ok || o.Title != "Fork of Reading at step 2 on fake:echo" {
		t.Errorf("opened %+v", opened)
	}
}

// What Fork refuses, it refuses before writing anything, with the
// sentinel the API maps: an invalid or unknown run, a route that does
// not parse or that this home cannot call, a step the run does not have.
func TestForkerRefusals(t *testing.T) {
	h, run, _ := forkRecording(t)
	f := loop.Forker{Log: h.log, Runs: oneRun{run: run, conv: h.conv}, Convs: h.convs, HomeDir: t.TempDir(),
		Routes: routesOf{"fake:echo"}, Kicker: loop.KickFunc(func(c string) { t.Errorf("kicked %s", c) }), Clock: ids{n: new(int)}}
	before, err := h.log.Last(t.Context(), events.Root+".>")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		run, route string
		step       int
		want       error
	}{
		{"bad id!", "fake:echo", 2, loop.ErrForkRun},
		{"unknown", "fake:echo", 2, loop.ErrForkRun},
		{run, "nocolon", 2, loop.ErrForkRoute},
		{run, "ollama:nope", 2, loop.ErrForkRoute},
		{run, "fake:echo", 9, loop.ErrForkStep},
	} {
		if _, err := f.Fork(t.Context(), c.run, c.step, c.route); !errors.Is(err, c.want) {
			t.Errorf("fork %s at %d on %s: %v, want %v", c.run, c.step, c.route, err, c.want)
		}
	}
	if after, err := h.log.Last(t.Context(), events.Root+".>"); err != nil || after != before {
		t.Errorf("a refused fork wrote: the log's last sequence %d, %v; was %d", after, err, before)
	}
}
