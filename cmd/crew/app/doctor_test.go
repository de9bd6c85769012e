package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
)

// doctorSays is what crew doctor says of h after its config, one line a
// line.
func doctorSays(t *testing.T, h *home.Home) string {
	t.Helper()
	var b strings.Builder
	Doctor(t.Context(), h.Dir, h, events.NewRedactor(), func(string) string { return "" }, &b)
	return b.String()
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

// syncWriter is a writer one goroutine writes while another reads it.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// Doctor writes each section as soon as it is known: while an MCP server
// has not answered yet (here one over HTTP that holds every request until
// the test lets it go), every section before it is already written and
// none after; let go, the rest follows.
func TestDoctorWritesEachSectionBeforeTheNextIsKnown(t *testing.T) {
	asked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(asked) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "not now", http.StatusServiceUnavailable)
	}))
	defer slow.Close()
	dir := newTestHome(t)
	f, err := os.OpenFile(filepath.Join(dir, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\nmcp_servers:\n  slow:\n    url: %s\n    timeout_seconds: 60\n", slow.URL)
	f.Close()
	h := loadTestHome(t, dir)
	var w syncWriter
	done := make(chan struct{})
	go func() {
		defer close(done)
		Doctor(t.Context(), dir, h, events.NewRedactor(), func(string) string { return "" }, &w)
	}()
	select {
	case <-asked:
	case <-done:
		close(release)
		t.Fatalf("doctor ended without asking the MCP server:\n%s", w.String())
	}
	got := w.String()
	close(release)
	for _, want := range []string{"agents: master", "versions: go", "  stream CREW: ", "model routes:", "web_search: ", "browser: "} {
		if !strings.Contains(got, want) {
			t.Errorf("while the MCP server is asked, doctor has not said %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "MCP servers") || strings.Contains(got, "desktop helper: ") {
		t.Errorf("doctor said a section before the MCP server answered:\n%s", got)
	}
	<-done
	if got := w.String(); !strings.Contains(got, "  slow (streamable HTTP "+slow.URL) || !strings.Contains(got, "desktop helper: ") {
		t.Errorf("after the MCP server answered, doctor does not say it and the rest:\n%s", got)
	}
}
