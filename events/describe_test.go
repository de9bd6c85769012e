package events_test

import (
	"regexp"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// Doctor's stream line says how many events the log holds, their size
// and their sequences, and hands back the last sequence; a stream that
// cannot be asked is the error.
func TestDescribeSaysWhatTheStreamHolds(t *testing.T) {
	srv, log := eventstest.Start(t)
	if _, err := log.Append(t.Context(), events.Conv("c1"), 0, msg("one"), msg("two"), msg("three")); err != nil {
		t.Fatal(err)
	}
	line, last, err := log.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := regexp.MustCompile(`^  stream CREW: 3 events, \d+ B, sequences 1\.\.3$`); !want.MatchString(line) || last != 3 {
		t.Errorf("Describe = %q, %d; want %v, 3", line, last, want)
	}
	srv.Close()
	if _, _, err := log.Describe(t.Context()); err == nil {
		t.Error("Describe of a closed server: no error")
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 19: "1.5 MiB", 5 << 30: "5.0 GiB"} {
		if got := events.HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
