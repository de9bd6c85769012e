package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// A read-only crew (crew replay, doctor) has no conversation log: its
// Convs refuse to load or write a conversation, saying why, instead of
// panicking or answering with an empty conversation as if the home had
// none (replay brings its own in-memory log).
func TestReadOnlyCrewsConversationsRefuseClearly(t *testing.T) {
	dir := t.TempDir()
	if _, err := home.Init(dir); err != nil {
		t.Fatal(err)
	}
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	secrets := events.NewRedactor()
	secrets.Add("TEST_KEY", "sk-the-homes-own-secret-0123456789")
	a, err := Open(t.Context(), dir, h, Options{ReadOnly: true, Secrets: secrets, Getenv: func(k string) string {
		if k == "MY_AGENT_ROUTES" {
			return "fake:echo"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, err = a.Convs.Get(t.Context(), "web-1")
	if !errors.Is(err, loop.ErrReadOnly) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("Convs.Get on a read-only crew = %v, want ErrReadOnly saying so", err)
	}
	if got := a.Convs.Secrets().String("key sk-the-homes-own-secret-0123456789"); strings.Contains(got, "0123456789") {
		t.Fatalf("the read-only crew's conversations do not redact with the home's secrets: %q", got)
	}
}
