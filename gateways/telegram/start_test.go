package telegram_test

import (
	"context"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/gateways/telegram"
)

// A start that cannot read the log says it is Telegram's: serve prints
// telegram.Start's error as it is, so the error names the gateway itself.
func TestStartThatCannotReadTheLogSaysTelegram(t *testing.T) {
	c := newCrew(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // every read of the log fails
	g, err := telegram.Start(ctx, telegram.Config{Token: testToken, APIURL: "http://127.0.0.1:1", Log: c.log, Inbound: c.in, Approvals: c.approver})
	if err == nil {
		g.Close()
		t.Fatal("Start read the log on a cancelled context")
	}
	if !strings.HasPrefix(err.Error(), "telegram: ") {
		t.Errorf("Start = %q, want an error that says telegram:", err)
	}
}
