package main

import (
	"slices"
	"testing"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// TestCheckPopulatedFindsALostOrTwiceAnsweredTurn: the check
// BenchmarkServeMillionEvents makes of each conversation it reads passes
// the history Populate's events make and fails one with an answer lost,
// answered twice, a question lost, two turns swapped or a turn too many.
func TestCheckPopulatedFindsALostOrTwiceAnsweredTurn(t *testing.T) {
	const turns = 4
	var whole []historyMessage
	for n := range turns + 1 {
		question, answer := eventstest.PopulatedTurn(n)
		whole = append(whole, historyMessage{Role: "user", Text: question}, historyMessage{Role: "assistant", Text: answer})
	}
	extra, whole := whole, whole[:2*turns]
	if err := checkPopulated(whole, turns); err != nil {
		t.Fatalf("what Populate wrote: %v", err)
	}
	swapped := slices.Clone(whole)
	swapped[0], swapped[2] = swapped[2], swapped[0]
	for name, history := range map[string][]historyMessage{
		"answer lost":     slices.Delete(slices.Clone(whole), 3, 4),
		"answered twice":  slices.Insert(slices.Clone(whole), 2, whole[1]),
		"question lost":   slices.Delete(slices.Clone(whole), 4, 5),
		"turns swapped":   swapped,
		"a turn too many": extra,
		"empty":           nil,
	} {
		if err := checkPopulated(history, turns); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
