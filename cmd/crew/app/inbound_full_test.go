package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/web"
)

// A store that refuses the message for want of room (the real embedded
// stream, its limit lowered to what it holds) makes POST /api/inbound
// answer 503 with Retry-After and the API's JSON error, and nothing is
// stored; once there is room the same request is answered 202 — only
// after the message is stored — and the conversation answered once.
func TestInboundAnswers503WithRetryAfterWhenTheStoreIsFull(t *testing.T) {
	a := benchApp(t, events.SyncInterval, &stepModel{steps: 1}, Options{})
	srv := httptest.NewServer(web.New(a.Web(web.Config{})))
	defer srv.Close()
	ctx := t.Context()
	// A first conversation, so the stream holds something to be full of.
	if _, err := a.Inbound.Receive(ctx, inbound.Message{Text: "first", Channel: "api:first"}); err != nil {
		t.Fatal(err)
	}
	eventstest.EventuallyWithin(t, time.Minute, "the first answered", a.Worker.Idle)
	stream := a.Log().Stream()
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	full := info.Config
	full.MaxMsgs = int64(info.State.Msgs) // DiscardNew: the next message is refused
	if _, err := a.Log().JetStream().UpdateStream(ctx, full); err != nil {
		t.Fatal(err)
	}
	post := func() *http.Response {
		t.Helper()
		resp, err := http.Post(srv.URL+"/api/inbound", "application/json", strings.NewReader(`{"text":"hello","channel":"api"}`))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := post()
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		body.Error.Code != "event_store_full" || !strings.Contains(body.Error.Message, "not stored") {
		t.Fatalf("POST /api/inbound to a full store: %d Retry-After %q, body %+v; want 503, Retry-After, event_store_full",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if after, err := stream.Info(ctx); err != nil || after.State.Msgs != info.State.Msgs {
		t.Fatalf("the refused message changed the store: %d events, was %d (%v)", after.State.Msgs, info.State.Msgs, err)
	}

	full.MaxMsgs = -1
	if _, err := a.Log().JetStream().UpdateStream(ctx, full); err != nil {
		t.Fatal(err)
	}
	resp = post()
	var acc struct {
		ConversationID string `json:"conversation_id"`
		MessageID      string `json:"message_id"`
	}
	json.NewDecoder(resp.Body).Decode(&acc)
	if resp.StatusCode != http.StatusAccepted || acc.MessageID == "" {
		t.Fatalf("POST /api/inbound once there is room: %d %+v", resp.StatusCode, acc)
	}
	// Stored when the 202 was sent: it is in the log now.
	envs, err := a.Log().ReadAll(ctx, events.Conv(acc.ConversationID).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, env := range envs {
		if env.Type == events.TypeMessageReceived {
			stored++
		}
	}
	if stored != 1 {
		t.Fatalf("%d messages stored in %s, want the one acknowledged", stored, acc.ConversationID)
	}
	eventstest.EventuallyWithin(t, time.Minute, "the message answered", func() bool {
		envs, err := a.Log().ReadAll(ctx, events.Conv(acc.ConversationID).Filter(), 0)
		if err != nil {
			t.Fatal(err)
		}
		finished := 0
		for _, env := range envs {
			if env.Type == events.TypeRunFinished {
				finished++
			}
		}
		if finished > 1 {
			t.Fatalf("answered %d times", finished)
		}
		return finished == 1 && a.Worker.Idle()
	})
}
