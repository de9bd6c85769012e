package app

import (
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
)

// doctorSays is what crew doctor says of h after its config, one line a
// line.
func doctorSays(t *testing.T, h *home.Home) string {
	t.Helper()
	return strings.Join(Doctor(t.Context(), h.Dir, h, events.NewRedactor(), func(string) string { return "" }), "\n")
}

// Doctor on a stopped home says each section in its order — the agents,
// the versions, the store opened (its stream and each projection's lag),
// then each feature's lines — and the agents' checks last.
func TestDoctorSaysEachSectionInOrder(t *testing.T) {
	dir := newTestHome(t)
	writeTestFile(t, dir+"/agents/broken/agent.yaml", "name: [\n")
	got := doctorSays(t, loadTestHome(t, dir))
	at := 0
	for _, want := range []string{"agents: master", "  skipped: ", "versions: go", "event store: " + dir + "/data/nats (",
		"  stream CREW: ", "  projection conversations: at ", "nats CLI: ", "model routes:", "web_search: ", "browser: ", "desktop helper: "} {
		i := strings.Index(got[at:], want)
		if i < 0 {
			t.Fatalf("doctor does not say %q after line %d:\n%s", want, strings.Count(got[:at], "\n")+1, got)
		}
		at += i + len(want)
	}
	if strings.Contains(got, "server: crew serve") || strings.Contains(got, "held by") {
		t.Errorf("a stopped home: doctor names a running server:\n%s", got)
	}
}
