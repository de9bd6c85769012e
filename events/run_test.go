package events

import (
	"reflect"
	"testing"
)

// Every registered payload with a RunID field answers RunOf with it, and no
// other does: a new event type cannot be forgotten.
func TestRunOfCoversEveryPayloadWithRunID(t *testing.T) {
	for _, e := range Registered() {
		typ := e.EventType()
		v := reflect.ValueOf(e).Elem()
		f := v.FieldByName("RunID")
		if f.IsValid() {
			f.SetString("r-" + typ)
		}
		got, ok := RunOf(e)
		switch {
		case f.IsValid() && (!ok || got != "r-"+typ):
			t.Errorf("%s has a RunID but RunOf = %q, %v", typ, got, ok)
		case !f.IsValid() && ok:
			t.Errorf("%s has no RunID but RunOf = %q, true", typ, got)
		}
	}
}
