package loop

import (
	"encoding/base32"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
)

// The live deltas of a model call are redacted as they stream: a secret
// split across text pieces or tool-argument pieces is never published,
// and what was held back is published when the call ends (R-X-6).
func TestLiveDeltasRedactedAcrossPieces(t *testing.T) {
	secret := "sk-test-live-" + t.Name()
	r := events.NewRedactor()
	r.Add("LIVE_TEST_KEY", secret)
	var got []llm.Delta
	l := newLiveStreams(r, func(d llm.Delta) { got = append(got, d) })
	text := "visible " + secret + " end " + hex.EncodeToString([]byte(secret)) + " " + base32.StdEncoding.EncodeToString([]byte(secret))
	args := `{"command":"echo ` + secret + `"}`
	for i := 0; i < len(text); i += 5 {
		l.send(llm.Delta{Text: text[i:min(len(text), i+5)]})
	}
	l.send(llm.Delta{ToolCallIndex: 0, ToolCallID: "c1", ToolName: "shell_run"})
	for i := 0; i < len(args); i += 4 {
		l.send(llm.Delta{ToolCallIndex: 0, ArgumentsDelta: args[i:min(len(args), i+4)]})
	}
	l.flush()
	var shownText, shownArgs strings.Builder
	for _, d := range got {
		if strings.Contains(d.Text+d.ArgumentsDelta, "sk-test-live") || strings.Contains(d.Text, hex.EncodeToString([]byte("sk-test-live"))) || strings.Contains(d.Text, base32.StdEncoding.EncodeToString([]byte("sk-test-li"))) {
			t.Errorf("a delta shows part of the secret: %+v", d)
		}
		shownText.WriteString(d.Text)
		shownArgs.WriteString(d.ArgumentsDelta)
		if d.ArgumentsDelta != "" && (d.ToolName != "shell_run" || d.ToolCallID != "c1") {
			t.Errorf("an arguments delta lost its call: %+v", d)
		}
	}
	if shownText.String() != "visible [redacted:LIVE_TEST_KEY] end [redacted:LIVE_TEST_KEY] [redacted:LIVE_TEST_KEY]" {
		t.Errorf("text shown = %q", shownText.String())
	}
	if shownArgs.String() != `{"command":"echo [redacted:LIVE_TEST_KEY]"}` {
		t.Errorf("arguments shown = %q", shownArgs.String())
	}
}
