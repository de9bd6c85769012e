package loop_test

import (
	"bytes"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// crew replay prints the report as ReplayReport.Write lays it out: the
// identical events, then the first divergence with both sides, or the
// run's verdict.
func TestReplayReportWrite(t *testing.T) {
	ok := []loop.ReplayLine{
		{Index: 1, Type: events.TypeRunStarted, OK: true},
		{Index: 2, Step: 1, Type: events.TypeModelCalled, OK: true},
	}
	for _, tc := range []struct {
		name     string
		rep      loop.ReplayReport
		diverged bool
		want     string
	}{
		{"identical", loop.ReplayReport{RunID: "r1", Conversation: "c1", Lines: ok}, false,
			"   1  step 0   run_started          ok\n" +
				"   2  step 1   model_called         ok\n" +
				"run r1 of c1 replayed: 2 events identical, no tool run, no network\n"},
		{"diverged", loop.ReplayReport{RunID: "r1", Conversation: "c1", Lines: ok[:1],
			Diverged: &loop.ReplayLine{Index: 2, Step: 1, Type: events.TypeModelCalled, Expected: `{"a":1}`, Got: `{"a":2}`}}, true,
			"   1  step 0   run_started          ok\n" +
				"   2  step 1   model_called         DIVERGED\n" +
				"      expected: {\"a\":1}\n" +
				"      got:      {\"a\":2}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if got := tc.rep.Write(&b); got != tc.diverged {
				t.Errorf("Write says diverged %v, want %v", got, tc.diverged)
			}
			if got := b.String(); got != tc.want {
				t.Errorf("printed\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
