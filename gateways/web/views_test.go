package web_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/projectionstest"
	"go.etcd.io/bbolt"
)

// Issue 10 item 7: GET /api/conversations/{id} of a conversation whose log
// holds an event this build cannot decode says "parked" and names the
// event's subject and sequence, also before the projection reached it.
func TestUndecodableConversationParkedInAPI(t *testing.T) {
	ctx := t.Context()
	_, log := eventstest.Start(t)
	if _, err := log.Append(ctx, events.Conv("c1"), events.Any,
		events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}),
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "hello"})); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "p.db"), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := projections.Rebuild(ctx, log, db, projections.Conversations{}); err != nil {
		t.Fatal(err)
	}
	subject := events.Conv("c1").Subject(events.TypeRunStarted)
	ack, err := log.JetStream().Publish(ctx, subject,
		[]byte(`{"type":"run_started","v":9,"id":"future1","time":"2026-11-30T09:00:00Z","data":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	v := web.ProjectionViews{DB: db, Convs: loop.NewConvs(log, nil)}
	got, err := v.Conversation(ctx, "c1")
	if err != nil {
		t.Fatalf("GET a parked conversation: %v", err)
	}
	b, _ := json.Marshal(got)
	var out struct {
		Status string `json:"status"`
		Parked struct {
			Subject string `json:"subject"`
			Seq     uint64 `json:"seq"`
			Error   string `json:"error"`
		} `json:"parked"`
	}
	json.Unmarshal(b, &out)
	if out.Status != "parked" || out.Parked.Subject != subject || out.Parked.Seq != ack.Sequence || out.Parked.Error == "" {
		t.Errorf("view = %s; want status parked naming %s seq %d", b, subject, ack.Sequence)
	}
}

// The API's views read their writes, as the pages do: a conversation, its
// runs, a run and the list show what the log held when they were asked
// for, though the projections apply a live event up to a few milliseconds
// later when nobody waits for it.
func TestAPIViewsReadTheirWrites(t *testing.T) {
	ctx := t.Context()
	log, db, runner := projectionstest.Start(t)
	v := web.ProjectionViews{DB: db, Convs: loop.NewConvs(log, nil), Log: log, Fresh: runner}
	if _, err := log.Append(ctx, events.Conv("c1"), events.Any,
		events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}),
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "hello"})); err != nil {
		t.Fatal(err)
	}
	got, err := v.Conversation(ctx, "c1")
	if err != nil {
		t.Fatalf("GET the conversation just stored: %v", err)
	}
	b, _ := json.Marshal(got)
	var conv struct {
		Messages int `json:"messages"`
	}
	json.Unmarshal(b, &conv)
	if conv.Messages != 1 {
		t.Errorf("conversation = %s; want its one message", b)
	}
	if _, err := log.Append(ctx, events.Conv("c1"), events.Any, events.MustNew(&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})); err != nil {
		t.Fatal(err)
	}
	runs, err := v.Runs(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if rs, _ := runs.([]projections.RunSummary); len(rs) != 1 {
		t.Errorf("runs = %+v; want the run just started", runs)
	}
	if _, err := log.Append(ctx, events.Conv("c2"), events.Any, events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"})); err != nil {
		t.Fatal(err)
	}
	list, err := v.Conversations(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if cs, _ := list.([]projections.Conversation); len(cs) != 2 {
		t.Errorf("conversations = %+v; want both", list)
	}
	if _, err := log.Append(ctx, events.Conv("c2"), events.Any, events.MustNew(&events.RunStarted{RunID: "r2", Agent: "master", Trigger: "message"})); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Run(ctx, "r2"); err != nil {
		t.Errorf("GET the run just started: %v", err)
	}
}
