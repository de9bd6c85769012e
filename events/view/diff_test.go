package view

import (
	"slices"
	"testing"
)

func TestDiff(t *testing.T) {
	got := Diff("a\nb\nc\nd\n", "a\nc\nx\nd\ny")
	want := []Line{{Same, "a"}, {Del, "b"}, {Same, "c"}, {Add, "x"}, {Same, "d"}, {Add, "y"}}
	if !slices.Equal(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
	if got := Diff("", ""); len(got) != 0 {
		t.Errorf("Diff of empty files = %v", got)
	}
	// Replacing one line shows the removal before the addition.
	if got, want := Diff("x\n", "y\n"), []Line{{Del, "x"}, {Add, "y"}}; !slices.Equal(got, want) {
		t.Errorf("Diff(x, y) = %v, want %v", got, want)
	}
}
