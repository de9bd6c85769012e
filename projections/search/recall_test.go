package search

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/projections"
)

// Serve on an index that cannot be opened (its folder is a file) logs at
// error what to do and leaves recall off: the tools are told no index is
// open, the server carries on.
func TestServeOfAnIndexThatCannotOpenLeavesRecallOff(t *testing.T) {
	_, log := eventstest.Start(t)
	dir := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(dir, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	r := NewRecall("main")
	r.Serve(Config{Dir: dir, Log: log, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if _, err := r.Recall(t.Context(), "main", "web-main", view.RecallQuery{Text: "plan"}); !errors.Is(err, ErrNotOpen) || r.Index() != nil {
		t.Errorf("recall after a failed Serve: %v, want ErrNotOpen and no index", err)
	}
	if got := logs.String(); !strings.Contains(got, `level=ERROR msg="recall is off`) || !strings.Contains(got, "crew projections rebuild search") {
		t.Errorf("the failure is not logged at error with what to do:\n%s", got)
	}
}

// Recall answers the recall tools and the turn notes from the index Start
// opened, under each seat's reach; before Start and after Close it says
// no index is open (the notes: nothing).
func TestRecallAnswersEachSeatFromTheIndexStartOpened(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	for _, c := range []struct{ id, agent, text string }{
		{"web-main", "main", "the quarterly plan for the allotment"},
		{"web-coach", "coach", "the quarterly plan for running"},
	} {
		envs := []events.Envelope{events.MustNew(&events.ConversationOpened{Agent: c.agent, Channel: "web"}), events.MustNew(&events.MessageReceived{Channel: "web", Text: c.text})}
		if _, err := log.Append(ctx, events.Conv(c.id), 0, envs...); err != nil {
			t.Fatal(err)
		}
	}
	last, err := log.Last(ctx, events.Root+".>")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecall("main")
	notOpen := func(when string) {
		t.Helper()
		if _, err := r.Recall(ctx, "coach", "web-coach", view.RecallQuery{Text: "plan"}); !errors.Is(err, ErrNotOpen) {
			t.Errorf("%s: recall: %v, want ErrNotOpen", when, err)
		}
		if _, _, err := r.Open(ctx, "coach", "web-coach", "crew.conv.web-coach.message_received@2"); !errors.Is(err, ErrNotOpen) {
			t.Errorf("%s: open: %v, want ErrNotOpen", when, err)
		}
		if hits, err := r.Earlier(ctx, "coach", "web-new", "the quarterly plan"); hits != nil || err != nil {
			t.Errorf("%s: earlier: %v %v, want nothing", when, hits, err)
		}
		if _, ok := r.Health(nil); ok || r.Index() != nil {
			t.Errorf("%s: an index is open", when)
		}
	}
	notOpen("before Start")
	var waited atomic.Bool
	err = r.Start(Config{Dir: t.TempDir(), Log: log, Start: last, ReleaseEvery: time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		After: waitFor(func(seq uint64) { waited.Store(seq == last) })})
	if err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, "the index caught up, as its health says", func() bool {
		h, ok := r.Health([]projections.Status{{LastSeq: last}})
		return ok && h.Lag == 0 && h.Checkpoint >= last && h.Running
	})
	if !waited.Load() {
		t.Error("the catch-up did not wait for After to hold Start")
	}
	recall := func(agent, conv, scope string) []view.RecallHit {
		t.Helper()
		hits, err := r.Recall(ctx, agent, conv, view.RecallQuery{Text: "quarterly plan", Scope: scope, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	if hits := recall("main", "web-main", "all"); len(hits) != 2 {
		t.Errorf("the master's recall: %+v, want both conversations", hits)
	}
	coach := recall("coach", "web-coach", "conversations")
	if len(coach) != 1 || !strings.HasPrefix(coach[0].Source, "conversation web-coach") || !strings.HasPrefix(coach[0].Ref, "crew.conv.web-coach.") {
		t.Fatalf("the coach's recall: %+v, want its own conversation alone", coach)
	}
	if hits := recall("coach", "web-coach", "memory"); len(hits) != 0 {
		t.Errorf("scope memory found messages: %+v", hits)
	}
	if text, ok, err := r.Open(ctx, "coach", "web-coach", coach[0].Ref); err != nil || !ok || !strings.Contains(text, "running") {
		t.Errorf("recall_open of the coach's hit: %q %v %v", text, ok, err)
	}
	main := recall("main", "web-main", "all")
	for _, h := range main {
		if strings.Contains(h.Source, "web-main") {
			if _, ok, err := r.Open(ctx, "coach", "web-coach", h.Ref); ok || err != nil {
				t.Errorf("the coach opened the master's conversation (%v)", err)
			}
		}
	}
	if _, ok, err := r.Open(ctx, "coach", "web-coach", "no ref"); ok || err != nil {
		t.Errorf("a malformed ref: %v %v", ok, err)
	}
	if hits, err := r.Earlier(ctx, "coach", "web-new", "the quarterly plan for running"); err != nil || len(hits) != 1 || !strings.Contains(hits[0].Source, "web-coach") {
		t.Errorf("earlier in a new conversation: %+v %v, want the coach's conversation", hits, err)
	}
	if hits, err := r.Earlier(ctx, "coach", "web-coach", "the quarterly plan for running"); err != nil || len(hits) != 0 {
		t.Errorf("earlier found the conversation itself: %+v %v", hits, err)
	}
	r.Close()
	notOpen("after Close")
}

// The recall line's lag is what the log holds past the index's
// checkpoint.
func TestHealthLagIsTheLogPastTheCheckpoint(t *testing.T) {
	h := healthOf(FeederStatus{Checkpoint: 5, Running: true}, []projections.Status{{Name: "conversations", LastSeq: 9}})
	if h.Lag != 4 || h.Checkpoint != 5 {
		t.Fatalf("recall health %+v, want lag 4 at checkpoint 5", h)
	}
	if h := healthOf(FeederStatus{Checkpoint: 9}, []projections.Status{{LastSeq: 9}}); h.Lag != 0 {
		t.Fatalf("caught up: lag %d", h.Lag)
	}
}

// waitFor is a projections.Freshness that answers at once, telling f
// what it was asked for.
type waitFor func(seq uint64)

func (w waitFor) WaitFor(_ context.Context, seq uint64) error { w(seq); return nil }

// While the projections and then the index catch up, the collector runs
// at CatchUpGC; once the index holds Start it runs at the runtime's
// percent again. An owner's GOGC (not 100) is left as it is.
func TestCatchUpGCHoldsUntilTheIndexCaughtUp(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	_, log := eventstest.Start(t)
	seq, err := log.Append(t.Context(), events.Conv("c1"), 0, events.MustNew(&events.MessageReceived{Channel: "web", Text: "hello"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ owner, during int }{{100, CatchUpGC}, {200, 200}} {
		debug.SetGCPercent(c.owner)
		waiting, release := make(chan struct{}), make(chan struct{})
		r := NewRecall("main")
		err := r.Start(Config{Dir: t.TempDir(), Log: log, Start: seq[0].Seq, CatchUpGC: CatchUpGC, Logger: slog.New(slog.DiscardHandler),
			After: waitFor(func(uint64) { close(waiting); <-release })})
		if err != nil {
			t.Fatal(err)
		}
		<-waiting // the projections "catching up"
		if got := gcPercent(); got != c.during {
			t.Errorf("GOGC %d: while catching up %d, want %d", c.owner, got, c.during)
		}
		close(release)
		eventstest.Eventually(t, "the collector's percent back once caught up", func() bool { return gcPercent() == c.owner })
		r.Close()
	}
}

// gcPercent is the collector's percent (GOGC), read by setting it and
// putting it back.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
