//go:build crewtest

package main

import (
	"errors"
	"os"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/projections"
)

// With CREW_TEST_HOLD_PROJECTIONS=<file>, crew serve's projections apply
// nothing while the file exists: the end-to-end tests see the server
// answering while its projections catch up, for as long as they need.
func init() {
	if file := os.Getenv(holdProjectionsEnv); file != "" {
		servedProjections = func() []projections.Projection {
			var out []projections.Projection
			for _, p := range projections.All() {
				out = append(out, held{p, file})
			}
			return out
		}
	}
}

type held struct {
	projections.Projection
	file string
}

func (h held) Apply(tx *projections.Tx, env events.Envelope) error {
	for {
		if _, err := os.Stat(h.file); errors.Is(err, os.ErrNotExist) {
			return h.Projection.Apply(tx, env)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Version is the held projection's, so holding changes nothing stored.
func (h held) Version() int {
	if v, ok := h.Projection.(projections.Versioned); ok {
		return v.Version()
	}
	return 1
}
