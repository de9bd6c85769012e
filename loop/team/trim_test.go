package team_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/team"
)

// failingConvs is the runtime's conversations with the next loads of
// chosen conversations failing, as a store without a leader fails them.
type failingConvs struct {
	team.Convs
	mu   sync.Mutex
	fail map[string]int
}

func (c *failingConvs) Get(ctx context.Context, id string) (*loop.Conv, error) {
	c.mu.Lock()
	fail := c.fail[id] > 0
	if fail {
		c.fail[id]--
	}
	c.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("load %s: %w", id, events.ErrStoreUnavailable)
	}
	return c.Convs.Get(ctx, id)
}

func (c *failingConvs) failNext(id string, n int) {
	c.mu.Lock()
	c.fail[id] = n
	c.mu.Unlock()
}

func (c *failingConvs) left(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fail[id]
}

// logBuf is a logger's output, safe to read while it writes.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// spawn stores team id's board with one member, ann (a coder), and a
// message to her.
func spawn(t *testing.T, log *events.Log, id string) {
	t.Helper()
	ctx := context.Background()
	tm, err := team.Open(ctx, log, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.AppendBoard(ctx, func(*team.Board, *team.Mailboxes) ([]events.Event, error) {
		return []events.Event{&events.TeamConfirmed{ProposalID: "prop_1", Members: []events.TeamMember{{Name: "ann", Agent: "coder"}}, Plan: "p"},
			&events.TeammateSpawned{Name: "ann", Agent: "coder", Conversation: team.MemberConversation(id, "ann")}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Send(ctx, "ann", func(*team.Board, *team.Mailboxes) ([]events.Event, error) {
		return []events.Event{&events.MailSent{From: team.Lead, To: "ann", Type: events.MailMessage, Content: "hello " + id}}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A let-go team's member event whose conversation fails to load is not
// dropped: the runtime says so at warn, with the conversation and the
// error, and tries again, so the member's finished run still reaches the
// lead (no later pass would: the team was let go as idle).
func TestTeamKickOfAMemberWhoseLoadFailsIsRetried(t *testing.T) {
	h := newHarness(t, silent)
	h.stop()
	convs := &failingConvs{fail: map[string]int{}}
	h.wrap = func(c team.Convs) team.Convs { convs.Convs = c; return convs }
	var logs logBuf
	h.logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h.start()
	team.SetMaxTeams(h.rt, 1)
	ids := []string{"lead-0", "lead-1"}
	for _, id := range ids {
		spawn(t, h.log, id)
	}
	reported := func(id string) int {
		_, mb := folds(t, h.log, nil, id)
		return len(mb.Reported)
	}
	h.quiet("every member ran and was reported, one team let go", func() bool {
		return reported(ids[0]) > 0 && reported(ids[1]) > 0 && len(team.Kept(h.rt)) == 1
	})
	gone := ids[0]
	if slices.Contains(team.Kept(h.rt), gone) {
		gone = ids[1]
	}
	member := team.MemberConversation(gone, "ann")
	convs.failNext(member, 1)
	before := reported(gone)
	// A run of the member no turn of this process ran (another
	// process's, before a failover): routed by its seat.
	conv, err := h.convs.Get(context.Background(), member)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Append(context.Background(), func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.RunStarted{RunID: "run_elsewhere", Agent: "coder", Trigger: "message"},
			&events.RunFinished{RunID: "run_elsewhere", Status: events.RunDone}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, "the let-go team's member run reported after its load failed", func() bool { return reported(gone) > before })
	if convs.left(member) != 0 {
		t.Fatal("the member's load never failed: the test tested nothing")
	}
	out := logs.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "conversation="+member) || !strings.Contains(out, events.ErrStoreUnavailable.Error()) {
		t.Errorf("no warning naming the conversation and the error:\n%s", out)
	}
}

// twoTeams is a runtime over a log holding teams lead-a and lead-b,
// keeping at most one fold: lead-b has a member, ann, with a pending
// shutdown request; lead-a is what board writes.
func twoTeams(t *testing.T, board func(id string) []events.Event) (*team.Runtime, *events.Log, *loop.Convs) {
	t.Helper()
	ctx := context.Background()
	_, log := eventstest.Start(t)
	convs := loop.NewConvs(log, nil)
	rt := team.New(team.Config{Log: log, Convs: convs, Crew: loop.Agents(map[string]loop.Agent{"coder": {ID: "coder"}})})
	t.Cleanup(rt.Close)
	team.SetMaxTeams(rt, 1)
	for _, id := range []string{"lead-a", "lead-b"} {
		tm, err := team.Open(ctx, log, id)
		if err != nil {
			t.Fatal(err)
		}
		evs := board(id)
		if id == "lead-b" {
			evs = []events.Event{&events.TeamConfirmed{ProposalID: "prop_1", Plan: "p"}}
		}
		if _, err := tm.AppendBoard(ctx, func(*team.Board, *team.Mailboxes) ([]events.Event, error) { return evs, nil }); err != nil {
			t.Fatal(err)
		}
	}
	tb, err := team.Open(ctx, log, "lead-b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Send(ctx, "ann", func(*team.Board, *team.Mailboxes) ([]events.Event, error) {
		return []events.Event{&events.MailSent{From: team.Lead, To: "ann", Type: events.MailShutdownRequest, RequestID: "req_1", Content: "stop"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return rt, log, convs
}

// A call that opens a fold past the bound does not wait for the trim:
// the trim runs on the runtime's own context, so a slow one (many busy
// teams, each read) cannot spend the 10 s of a Stop, Workdir or Prompt
// — Stop answered "" and Workdir "no claimed task". Here the trim is held
// on lead-a's fold while Stop asks about lead-b's member.
func TestTeamCallDoesNotWaitOnTheTrim(t *testing.T) {
	rt, _, _ := twoTeams(t, func(string) []events.Event {
		return []events.Event{&events.TeamConfirmed{ProposalID: "prop_1", Plan: "p"}}
	})
	ctx := context.Background()
	ta, err := rt.Team(ctx, "lead-a")
	if err != nil {
		t.Fatal(err)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	defer free()
	go ta.View(ctx, func(*team.Board, *team.Mailboxes) { close(holding); <-release })
	<-holding
	answer := make(chan string, 1)
	go func() {
		answer <- rt.Stop(loop.Seat{Team: "lead-b", Member: "ann", Conversation: team.MemberConversation("lead-b", "ann")})
	}()
	var got string
	select {
	case got = <-answer:
	case <-time.After(30 * time.Second):
		free()
		got = <-answer
		t.Errorf("Stop waited for the trim of another team's fold (answered %q once it was let go on)", got)
	}
	free()
	if want := "the lead asked this teammate to shut down (request req_1)"; got != want {
		t.Errorf("Stop = %q, want %q", got, want)
	}
	eventstest.Eventually(t, "the trim let lead-a go", func() bool {
		return rt.Idle() && slices.Equal(team.Kept(rt), []string{"lead-b"})
	})
}

// A team whose only ready task has a broken worktree binding is judged
// idle and let go: no pass would claim that task (fail closed), and
// mending the binding is an event of the team, which opens the fold
// again. A ready task a pass would claim keeps the team.
func TestTeamWithOnlyABrokenBindingReadyIsLetGo(t *testing.T) {
	good := filepath.Join(t.TempDir(), "wt")
	os.MkdirAll(good, 0o700)
	os.WriteFile(filepath.Join(good, ".git"), []byte("gitdir: elsewhere\n"), 0o600)
	for _, c := range []struct {
		name, path string
		kept       string
	}{
		{"broken binding", filepath.Join(t.TempDir(), "gone"), "lead-b"},
		{"claimable", good, "lead-a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			rt, _, convs := twoTeams(t, func(id string) []events.Event {
				return []events.Event{&events.TeamConfirmed{ProposalID: "prop_1", Members: []events.TeamMember{{Name: "ann", Agent: "coder"}}, Plan: "p"},
					&events.TeammateSpawned{Name: "ann", Agent: "coder", Conversation: team.MemberConversation(id, "ann")},
					&events.TaskCreated{TaskID: "t1", Subject: "build it"},
					&events.TaskWorktreeBound{TaskID: "t1", Name: "wt", Path: c.path, Branch: "b"}}
			})
			// Ann's conversation is open and idle: nothing but the ready
			// task could keep the team.
			conv, err := convs.Get(ctx, team.MemberConversation("lead-a", "ann"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
				return []events.Event{&events.ConversationOpened{Agent: "coder", Channel: team.Channel, Team: "lead-a", Member: "ann", ParentConversation: "lead-a"}}, nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"lead-a", "lead-b"} {
				if _, err := rt.Team(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			eventstest.Eventually(t, "the trim done", rt.Idle)
			if got := team.Kept(rt); !slices.Equal(got, []string{c.kept}) {
				t.Errorf("kept %v, want [%s]", got, c.kept)
			}
		})
	}
}
