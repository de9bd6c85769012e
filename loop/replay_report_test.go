package loop_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/memlog"
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

// A replay of a teammate's run reads its own conversation, its team's
// board and mailboxes and its lead's conversation, in stream order; a
// conversation outside a team reads its own events and its own (empty)
// team scope only.
func TestReplayEventsReadTheTeam(t *testing.T) {
	log := memlog.New(nil)
	put := func(scope events.Scope, e events.Event) uint64 {
		t.Helper()
		env, err := events.New(e)
		if err != nil {
			t.Fatal(err)
		}
		return log.Put(scope, env).Seq
	}
	msg := &events.MessageReceived{Text: "hi"}
	lead := put(events.Conv("lead"), &events.ConversationOpened{Agent: "master", Channel: "web"})
	other := put(events.Conv("other"), &events.ConversationOpened{Agent: "master", Channel: "web"})
	mate := put(events.Conv("mate"), &events.ConversationOpened{Agent: "dev", Channel: "team", Team: "lead"})
	board := put(events.Team("lead"), msg)
	put(events.Team("t2"), msg)
	mail := put(events.Mail("lead", "dev"), msg)
	mate2 := put(events.Conv("mate"), msg)
	other2 := put(events.Conv("other"), msg)
	lead2 := put(events.Conv("lead"), msg)

	for _, tc := range []struct {
		conv string
		want []uint64
	}{
		{"mate", []uint64{lead, mate, board, mail, mate2, lead2}},
		{"lead", []uint64{lead, board, mail, lead2}},
		{"other", []uint64{other, other2}},
	} {
		envs, err := loop.ReplayEvents(t.Context(), log, tc.conv)
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, env := range envs {
			got = append(got, env.Seq)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ReplayEvents(%s) read sequences %v, want %v", tc.conv, got, tc.want)
		}
	}
}
