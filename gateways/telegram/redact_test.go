package telegram

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// Every request the gateway sends is redacted, texts and captions alike,
// whatever produced them (R-X-6).
func TestTelegramSendIsRedacted(t *testing.T) {
	secret := "sk-test-telegram-" + t.Name()
	secrets := events.NewRedactor()
	secrets.Add("TG_TEST_KEY", secret)
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Write([]byte(`{"ok":true,"result":{}}`))
	}))
	defer srv.Close()
	api := &botAPI{base: srv.URL + "/botT", hc: srv.Client(), token: "T", secrets: secrets}
	g := &Gateway{api: api, cfg: Config{PollEvery: 1}}
	send := func(text string) {
		// As wantText: redacted whole, then split.
		for _, part := range Split(secrets.String(text), MaxMessage) {
			if _, err := g.sendWanted(t.Context(), events.TelegramSendWanted{Chat: 1, Kind: events.SendReply, Text: part}, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	send("visible-text " + secret)
	// A long reply is split into messages: a secret across the split is
	// caught too.
	send(strings.Repeat("a", MaxMessage-10) + secret + " long-end")
	if err := api.call(t.Context(), "sendPhoto", map[string]any{"chat_id": 1, "caption": "visible-caption " + secret}, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(bodies, "\n")
	if !strings.Contains(all, "visible-text") || !strings.Contains(all, "visible-caption") {
		t.Fatalf("control: the bodies lack the visible text: %s", all)
	}
	if !strings.Contains(all, "long-end") {
		t.Fatalf("control: the long reply was not sent")
	}
	if strings.Contains(all, "sk-test-telegram") || strings.Contains(all, secret[10:]) {
		t.Errorf("a body holds the secret: %s", all)
	}
	for _, b := range bodies {
		var v map[string]any
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Errorf("body is not JSON after redaction: %s", b)
		}
	}
}
