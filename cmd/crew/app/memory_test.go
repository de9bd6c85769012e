package app

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections/search"
)

// /healthz details carry the recall index's progress (it catches up
// after ready, in the background): its checkpoint and how many events of
// the log it has not applied, which reaches 0 once it has them all.
func TestHealthzCarriesTheRecallIndexLag(t *testing.T) {
	a := benchApp(t, events.SyncInterval, &stepModel{steps: 1}, Options{Serve: true, Listen: "127.0.0.1:0"})
	srv := httptest.NewServer(web.New(a.Web(web.Config{})))
	defer srv.Close()
	for range 3 {
		if _, err := a.Inbound.Receive(t.Context(), inbound.Message{Text: "remember the blue kettle", Channel: "web"}); err != nil {
			t.Fatal(err)
		}
	}
	type health struct {
		Details struct {
			Recall *search.Health `json:"recall"`
		} `json:"details"`
	}
	read := func() search.Health {
		t.Helper()
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var h health
		if err := json.Unmarshal(raw, &h); err != nil || h.Details.Recall == nil {
			t.Fatalf("/healthz has no recall details (%v): %s", err, raw)
		}
		return *h.Details.Recall
	}
	eventstest.EventuallyWithin(t, time.Minute, "the turns answered", func() bool { return a.Worker.Idle() })
	last, err := a.Log().Last(t.Context(), events.Root+".>")
	if err != nil {
		t.Fatal(err)
	}
	eventstest.EventuallyWithin(t, time.Minute, "the recall index caught up, as /healthz says", func() bool {
		r := read()
		return r.Lag == 0 && r.Checkpoint >= last && r.Running
	})
}
