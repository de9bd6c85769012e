package loop_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/my-agent-crew/crew/loop"
)

// maxDepsFields is how many seams a turn may have (issue 25 item 5): a new
// edge of the turn joins one of them (a method of Crew or Clock, a field
// of Services) instead of adding a field to Deps.
const maxDepsFields = 8

// tooManyFields says why t has more than max fields, or nil.
func tooManyFields(t reflect.Type, max int) error {
	if n := t.NumField(); n > max {
		names := make([]string, n)
		for i := range n {
			names[i] = t.Field(i).Name
		}
		return fmt.Errorf("%s has %d fields %v, more than %d: group the new edge into a named seam (Crew, Clock, Services) instead", t, n, names, max)
	}
	return nil
}

// TestSeamsDepsStaysSmall: loop.Deps keeps at most eight fields, each a
// named seam; and the check fails on a ninth.
func TestSeamsDepsStaysSmall(t *testing.T) {
	if err := tooManyFields(reflect.TypeFor[loop.Deps](), maxDepsFields); err != nil {
		t.Fatal(err)
	}
	type nine struct{ A, B, C, D, E, F, G, H, I int }
	if tooManyFields(reflect.TypeFor[nine](), maxDepsFields) == nil {
		t.Fatal("a struct of nine fields passed the check")
	}
	type eight struct{ A, B, C, D, E, F, G, H int }
	if err := tooManyFields(reflect.TypeFor[eight](), maxDepsFields); err != nil {
		t.Fatalf("a struct of eight fields failed the check: %v", err)
	}
}
