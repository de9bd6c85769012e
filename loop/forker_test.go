package loop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
)

// oneRun is a ForkRuns that knows one run.
type oneRun struct{ run, conv, title string }

func (r oneRun) RunConversation(_ context.Context, id string) (string, string, bool, error) {
	if id != r.run {
		return "", "", false, nil
	}
	return r.conv, r.title, true, nil
}

func (r oneRun) RunEnded(_ context.Context, id string) (string, string, int, error) {
	return "halted:" + id, "max_steps", 7, nil
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
	f := loop.Forker{Log: h.log, Runs: oneRun{run: run, conv: h.conv, title: "Reading"}, Convs: h.convs, Spills: tools.SpillDir(filepath.Join(home, "spill")),
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
	f := loop.Forker{Log: h.log, Runs: oneRun{run: run, conv: h.conv}, Convs: h.convs, Spills: tools.SpillDir(t.TempDir()),
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

// worker is an Idle whose first busy polls run the kicked conversations'
// turns, as the worker would.
type worker struct {
	h      *harness
	kicked []string
	polls  int
}

func (w *worker) Kick(conv string) { w.kicked = append(w.kicked, conv) }

func (w *worker) Idle() bool {
	w.polls++
	if len(w.kicked) == 0 {
		return true
	}
	conv, err := w.h.convs.Get(w.h.t.Context(), w.kicked[0])
	if err != nil {
		w.h.t.Fatal(err)
	}
	w.kicked = w.kicked[1:]
	if err := loop.NewTurn(w.h.agent, w.h.deps, conv).Run(w.h.t.Context()); err != nil {
		w.h.t.Fatalf("fork turn: %v", err)
	}
	return false
}

// Forker.Ended waits for the worker to be idle, then tells the fork's run
// as the runs view has it and the conversation's last reply; a fork not
// yet run is open; a context ended while the worker is busy names the
// fork, which crew serve takes up.
func TestForkerEndedWaitsForTheWorker(t *testing.T) {
	h, run, _ := forkRecording(t)
	h.models["fake:echo"] = &fakeModel{route: "fake:echo", replies: []reply{say("done on echo")}}
	w := &worker{h: h}
	f := loop.Forker{Log: h.log, Runs: oneRun{run: run, conv: h.conv}, Convs: h.convs, Spills: tools.SpillDir(t.TempDir()),
		Routes: routesOf{"fake:echo"}, Kicker: w, Clock: ids{n: new(int)}}
	fk, err := f.Fork(t.Context(), run, 2, "fake:echo")
	if err != nil {
		t.Fatal(err)
	}
	kicked := w.kicked
	w.kicked = nil
	before, err := f.Ended(t.Context(), fk, w)
	if err != nil {
		t.Fatal(err)
	}
	if !before.Open || before.Waiting != nil || before.LastReply != "hi" {
		t.Errorf("before its turn: open %v, waiting %v, last reply %q; want open, the original's last reply", before.Open, before.Waiting, before.LastReply)
	}
	w.kicked, w.polls = kicked, 0
	got, err := f.Ended(t.Context(), fk, w)
	if err != nil {
		t.Fatal(err)
	}
	want := loop.ForkEnd{Forked: fk, Status: "halted:" + fk.RunID, Reason: "max_steps", Steps: 7, LastReply: "done on echo"}
	if got != want || w.polls != 2 {
		t.Errorf("after its turn: %+v after %d polls, want %+v after 2", got, w.polls, want)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := f.Ended(ctx, fk, idleNever{}); err == nil || !strings.Contains(err.Error(), fk.Conversation) {
		t.Errorf("cancelled while busy: %v, want an error naming %s", err, fk.Conversation)
	}
}

// idleNever is a worker that is always busy.
type idleNever struct{}

func (idleNever) Idle() bool { return false }

// ForkEnd.Write says what crew replay --from-step prints: the approval
// the fork waits on, that its run is open, or how it ended, then its last
// reply.
func TestForkEndWrite(t *testing.T) {
	fk := loop.Forked{Conversation: "fork-1", RunID: "r9", Route: "fake:echo"}
	for _, c := range []struct {
		end  loop.ForkEnd
		want string
	}{
		{loop.ForkEnd{Forked: fk, Waiting: &loop.Approval{ID: "a1", Tool: "shell"}, Open: true, LastReply: "may I?"},
			"the fork waits for your approval of shell (a1): start crew serve and answer it on the web or Telegram\nlast reply: may I?\n"},
		{loop.ForkEnd{Forked: fk, Open: true}, "the fork's run is still open: crew serve takes it up\n"},
		{loop.ForkEnd{Forked: fk, Status: "done", Steps: 3, LastReply: "ok"}, "run r9 done after 3 steps on fake:echo\nlast reply: ok\n"},
		{loop.ForkEnd{Forked: fk, Status: "halted", Reason: "max_steps", Steps: 5}, "run r9 halted after 5 steps on fake:echo (max_steps)\n"},
	} {
		var b strings.Builder
		c.end.Write(&b)
		if b.String() != c.want {
			t.Errorf("%+v wrote %q, want %q", c.end, b.String(), c.want)
		}
	}
}
