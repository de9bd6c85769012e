package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// The "earlier, on this topic" turn note through crew serve: after a
// conversation about the radiator is closed, the owner's first message of
// the next one that shares its words reaches the model with the old
// message found by recall, fenced, with its source; the next message of
// that conversation carries no such section again.
func TestEarlierOnThisTopicThroughServe(t *testing.T) {
	model := &recordingModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	home := initHome(t)
	useUTC(t, home)
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	send := func(text, conv string) (string, string) {
		t.Helper()
		before := len(model.requests())
		body := map[string]any{"text": text, "channel": "web"}
		if conv != "" {
			body["conversation_id"] = conv
		}
		code, acc := postJSON(t, s.url+"/api/inbound", body)
		if code != 202 {
			t.Fatalf("inbound %q = %d %v", text, code, acc)
		}
		id := acc["conversation_id"].(string)
		waitConv(t, s.url, id, "answered", func(c convView) bool { return settled(c) && len(model.requests()) > before })
		users := model.requests()[before].userMessages()
		return id, users[len(users)-1]
	}
	old, first := send("the radiator valve in the bedroom keeps hissing", "")
	if strings.Contains(first, "Earlier, on this topic") {
		t.Errorf("nothing was said before, yet:\n%s", first)
	}
	eventstest.Eventually(t, "the message indexed", func() bool {
		var res struct {
			Hits []struct {
				Conversation string `json:"conversation"`
			} `json:"hits"`
		}
		getJSON(t, s.url+"/api/search?q=radiator+valve", &res)
		return len(res.Hits) > 0 && res.Hits[0].Conversation == old
	})
	if code, closed := postJSON(t, s.url+"/api/conversations/"+old+"/close", map[string]any{}); code != 200 {
		t.Fatalf("close = %d %v", code, closed)
	}
	conv, got := send("is the bedroom radiator still hissing?", "")
	if conv == old {
		t.Fatalf("the message went to the closed conversation")
	}
	i := strings.Index(got, "Earlier, on this topic")
	if !strings.HasPrefix(got, frame+"\n") || i < 0 || !strings.Contains(got[i:], "1. conversation "+old+" · ") ||
		!strings.Contains(got[i:], "<<<UNTRUSTED DATA id=") || !strings.Contains(got[i:], "radiator valve in the bedroom keeps hissing") ||
		!strings.HasSuffix(got, "[End of memory]\n\nis the bedroom radiator still hissing?") {
		t.Fatalf("the first message of the next conversation reads:\n%s", got)
	}
	if _, again := send("and the radiator valve, is it hissing?", conv); strings.Contains(again, "Earlier, on this topic") {
		t.Errorf("told again on the second message:\n%s", again)
	}
	s.stop(t)
}
