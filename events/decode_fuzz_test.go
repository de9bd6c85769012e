package events_test

import (
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// Decoding arbitrary stored bodies never panics, and what decodes has a
// known type and version.
func FuzzDecodeStored(f *testing.F) {
	f.Add([]byte(`{"type":"message_received","v":1,"id":"a","time":"2026-11-30T00:00:00Z","data":{"channel":"web","text":"hi"}}`))
	f.Add([]byte(`{"type":"message_received","v":7}`))
	f.Add([]byte(`{"type":"run_finished","v":1,"data":null}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, body []byte) {
		env, err := events.DecodeStored("crew.conv.f.x", 1, body)
		if err != nil {
			return
		}
		if _, err := env.Decode(); err != nil {
			// Known type and version but a payload of the wrong shape is a
			// DecodeError too, never a panic.
			return
		}
	})
}
