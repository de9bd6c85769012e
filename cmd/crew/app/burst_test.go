package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/nats-io/nats.go"
)

// lastGets counts the "last message of a subject" direct gets the crew's
// connection sends (both forms: the subject in the request's subject, and
// last_by_subj in its body), by the subject asked for.
type lastGets struct {
	mu  sync.Mutex
	got map[string]int
}

func watchLastGets(t *testing.T, nc *nats.Conn) *lastGets {
	t.Helper()
	lg := &lastGets{got: map[string]int{}}
	prefix := "$JS.API.DIRECT.GET." + events.StreamName
	sub, err := nc.Subscribe(prefix+".>", func(m *nats.Msg) {
		lg.mu.Lock()
		lg.got[strings.TrimPrefix(m.Subject, prefix+".")]++
		lg.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	sub2, err := nc.Subscribe(prefix, func(m *nats.Msg) {
		var req struct {
			LastBySubj string `json:"last_by_subj"`
		}
		if json.Unmarshal(m.Data, &req) == nil && req.LastBySubj != "" {
			lg.mu.Lock()
			lg.got[req.LastBySubj]++
			lg.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe(); sub2.Unsubscribe() })
	return lg
}

// conv is what was asked of conversations' subjects.
func (lg *lastGets) conv() map[string]int {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	out := map[string]int{}
	for subj, n := range lg.got {
		if strings.HasPrefix(subj, events.Root+".conv.") {
			out[subj] = n
		}
	}
	return out
}

func (lg *lastGets) all() map[string]int {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	out := map[string]int{}
	for subj, n := range lg.got {
		out[subj] = n
	}
	return out
}

// A turn's hot path — the message stored, the conversation loaded, the
// pass, three model calls with their reservations and the tool steps —
// never asks the store for "the last message" of a conversation's
// subjects: the embedded server answers that by loading the message block
// holding it (8 MB), in the crew's connection, ahead of every publish
// behind it; under a burst on a busy machine that is what made passes
// time out. Neither does a conversation loaded again after it was let go
// (the snapshot and the tail after it).
func TestTurnsAskNoLastMessageOfAConversation(t *testing.T) {
	m := &stepModel{steps: 3}
	a := benchApp(t, events.SyncInterval, m, Options{})
	a.Convs.SetIdleLimit(1) // conversations let go and loaded again
	ctx := t.Context()
	send := func(channel string) {
		t.Helper()
		if _, err := a.Inbound.Receive(ctx, inbound.Message{Text: "go", Channel: channel}); err != nil {
			t.Fatal(err)
		}
		eventstest.EventuallyWithin(t, time.Minute, "the turn to finish", a.Worker.Idle)
	}
	send("bench:warm") // the ledger, the prompt and the notes read once
	lg := watchLastGets(t, a.Conn())
	for i := range 3 {
		send(fmt.Sprintf("bench:%d", i))
	}
	send("bench:warm") // a second turn on a conversation let go meanwhile
	for i := range 3 {
		id := inbound.DailyID(home.MasterID, home.MasterID, fmt.Sprintf("bench:%d", i), time.Now().In(a.Home.Config.Location()))
		st, err := loop.LoadState(ctx, a.Log(), nil, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Messages) != 6 || st.Messages[5].Text != "done" {
			t.Fatalf("%s not answered: %d messages", id, len(st.Messages))
		}
	}
	if got := lg.conv(); len(got) > 0 {
		t.Fatalf("the turns asked for the last message of conversation subjects: %v", got)
	}
	t.Logf("last-message direct gets of other subjects during the turns: %v", lg.all())
}

// panicOnce panics in its first call (a provider's bug), then answers as
// the step model does.
type panicOnce struct {
	stepModel
	calls atomic.Int32
}

func (m *panicOnce) Call(ctx context.Context, req llm.Request) (llm.Reply, error) {
	if m.calls.Add(1) == 1 {
		panic("provider bug")
	}
	return m.stepModel.Call(ctx, req)
}

// syncBuffer is a log sink safe for the worker's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A failed pass is logged at warn with its error, counted, and the count
// is in /healthz's details (and doctor's turns line); the pass is retried
// and the conversation answered once.
func TestFailedPassIsLoggedAtWarnAndCountedInHealthz(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m := &panicOnce{stepModel: stepModel{steps: 1}}
	a := benchApp(t, events.SyncInterval, m, Options{Logger: logger})
	srv := httptest.NewServer(web.New(a.Web(web.Config{})))
	defer srv.Close()
	health := func() web.HealthReport {
		t.Helper()
		h, err := web.Client{URL: srv.URL}.Health(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	eventstest.EventuallyWithin(t, time.Minute, "the server ready", func() bool { return health().Status == "ready" })
	if h := health(); h.Turns == nil || h.Turns.FailedPasses != 0 {
		t.Fatalf("before any turn: /healthz turns %+v, want 0 failed passes", h.Turns)
	}
	if _, err := a.Inbound.Receive(t.Context(), inbound.Message{Text: "go", Channel: "web"}); err != nil {
		t.Fatal(err)
	}
	eventstest.EventuallyWithin(t, time.Minute, "the turn answered after its retry", func() bool {
		return a.Worker.Idle() && m.calls.Load() >= 2
	})
	h := health()
	if h.Turns == nil || h.Turns.FailedPasses != 1 {
		t.Fatalf("/healthz turns %+v, want 1 failed pass", h.Turns)
	}
	var warned bool
	for line := range strings.Lines(logs.String()) {
		var rec struct {
			Level, Msg, Err, Conversation string
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "turn pass failed" {
			if rec.Level != "WARN" || !strings.Contains(rec.Err, "provider bug") || rec.Conversation == "" {
				t.Fatalf("failed pass logged as %s", line)
			}
			warned = true
		}
	}
	if !warned {
		t.Fatalf("no \"turn pass failed\" warning in the log:\n%s", logs.String())
	}
	if line := strings.Join(h.Lines(), "\n"); !strings.Contains(line, "1 failed passes since start") {
		t.Fatalf("doctor's line: %q", line)
	}
	// Raw JSON, as a monitor reads it.
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), `"failed_passes": 1`) {
		t.Fatalf("/healthz: %s", raw)
	}
}

// The crew keeps answering when the embedded server cuts its connections
// (as it cut the crew's one connection in a 10,000 burst, a slow consumer
// past its write deadline): both connections are made again, every
// message accepted before, during and after the cut is answered once, no
// pass fails, the projections go on to the end of the log, and each loss
// is logged at warn with the server's reason and counted in /healthz.
func TestCrewKeepsAnsweringWhenItsConnectionsAreCut(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a := benchApp(t, events.SyncInterval, &stepModel{steps: 3}, Options{Logger: logger})
	ctx := t.Context()
	var ids []string
	send := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			acc, err := a.Inbound.Receive(ctx, inbound.Message{Text: "go", Channel: fmt.Sprintf("cut:%d", i)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, acc.ConversationID)
		}
	}
	send(0, 30)
	srv := a.store.Server()
	for _, nc := range []*nats.Conn{srv.Conn(), srv.ReadConn()} {
		if err := srv.Disconnect(nc); err != nil {
			t.Fatal(err)
		}
	}
	send(30, 60) // while the connections are made again
	eventstest.EventuallyWithin(t, 2*time.Minute, "the turns to finish", a.Worker.Idle)
	for _, id := range ids {
		if ok, runs := answeredOnce(t, a, id); !ok {
			envs, _ := a.Log().ReadAll(ctx, events.Conv(id).Filter(), 0)
			var got []string
			for _, e := range envs {
				got = append(got, fmt.Sprintf("%d %s", e.Seq, e.Type))
			}
			t.Fatalf("%s not answered once (%d runs finished): %v\n%s", id, runs, got, logs.String())
		}
	}
	if s := a.Worker.Stats(); s.FailedPasses > 0 {
		t.Fatalf("%d passes failed across the cut:\n%s", s.FailedPasses, logs.String())
	}
	last := lastSeq(t, a)
	eventstest.EventuallyWithin(t, time.Minute, "the projections at the end of the log", func() bool {
		ready, _ := a.Runner.Ready(ctx, last)
		return ready
	})
	_, details := a.Health(ctx)
	if st := details.(map[string]any)["event_store"].(events.StoreStats); st.Reconnects == 0 || st.ReadReconnects == 0 {
		t.Fatalf("/healthz event_store %+v: want each connection's reconnect counted", st)
	}
	eventstest.EventuallyWithin(t, 10*time.Second, "both losses logged", func() bool {
		return strings.Count(logs.String(), `msg="lost the connection to the event store; reconnecting"`) == 2
	})
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "lost the connection") && (!strings.Contains(line, "level=WARN") || !strings.Contains(line, "reason=Kicked")) {
			t.Fatalf("loss logged as %s", line)
		}
	}
}
