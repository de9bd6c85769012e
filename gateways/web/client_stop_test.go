package web_test

import (
	"context"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/events/refusal"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/web"
)

// stops is a Stopper that records what it was asked.
type stops struct{ asked []string }

func (s *stops) Stop(_ context.Context, conv, scope, by string) (view.Stopped, error) {
	s.asked = append(s.asked, conv+" "+scope+" "+by)
	if conv == "idle" {
		return view.Stopped{}, refusal.ErrNothingRunning
	}
	return view.Stopped{RunID: "r1", Dropped: 2}, nil
}

func (s *stops) StopAll(_ context.Context, by string) ([]inbound.StoppedConversation, error) {
	s.asked = append(s.asked, "all "+by)
	return []inbound.StoppedConversation{{Conversation: "c1", Stopped: view.Stopped{RunID: "r1"}}, {Conversation: "c2", Stopped: view.Stopped{Dropped: 1}}}, nil
}

func (s *stops) RemoveWaiting(context.Context, string, int, string) error { return nil }

// crew stop's client: a conversation's stop by cli with its scope comes
// back as that conversation's, a stop of all as each stopped one, and a
// refusal as the server's message.
func TestClientStop(t *testing.T) {
	_, log := eventstest.Start(t)
	st := &stops{}
	srv := httptest.NewServer(web.New(web.Config{Log: log, Views: fakeViews{}, AuditKey: testAuditKey, Stops: st}))
	defer srv.Close()
	c := web.Client{URL: srv.URL}

	got, err := c.Stop(t.Context(), "c1", events.StopQueue)
	want := []inbound.StoppedConversation{{Conversation: "c1", Stopped: view.Stopped{RunID: "r1", Dropped: 2}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Stop c1 = %+v, %v; want %+v", got, err, want)
	}
	got, err = c.Stop(t.Context(), "", "")
	want = []inbound.StoppedConversation{{Conversation: "c1", Stopped: view.Stopped{RunID: "r1"}}, {Conversation: "c2", Stopped: view.Stopped{Dropped: 1}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Stop all = %+v, %v; want %+v", got, err, want)
	}
	if got, err := c.Stop(t.Context(), "idle", ""); got != nil || err == nil || !strings.Contains(err.Error(), "the running server answered") {
		t.Errorf("Stop of an idle conversation = %+v, %v; want the server's refusal", got, err)
	}
	wantAsked := []string{"c1 queue cli", "all cli", "idle  cli"}
	if !reflect.DeepEqual(st.asked, wantAsked) {
		t.Errorf("the server was asked %q, want %q", st.asked, wantAsked)
	}
}
