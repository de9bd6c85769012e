package events_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/memlog"
)

// A replay of a teammate's run reads its own conversation, its team's
// board and mailboxes and its lead's conversation, in stream order; a
// conversation outside a team reads its own events and its own (empty)
// team scope only.
func TestRecordedReadsTheTeam(t *testing.T) {
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
		envs, err := events.Recorded(t.Context(), log, tc.conv)
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, env := range envs {
			got = append(got, env.Seq)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Recorded(%s) read sequences %v, want %v", tc.conv, got, tc.want)
		}
	}
}

// What WriteRecorded writes, ReadRecorded reads back whole and in order;
// an answer cut before its end line, or one with a line taken out, is an
// error that says so.
func TestRecordedRoundTrip(t *testing.T) {
	log := memlog.New(nil)
	for _, text := range []string{"one", "two", "three"} {
		env, err := events.New(&events.MessageReceived{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		log.Put(events.Conv("c1"), env)
	}
	envs, err := events.Recorded(t.Context(), log, "c1")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := events.WriteRecorded(&b, "c1", envs); err != nil {
		t.Fatal(err)
	}
	got, err := events.ReadRecorded(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("read back %d events, want 3", len(got))
	}
	for i := range got {
		w := envs[i]
		if g := got[i]; g.Seq != w.Seq || g.Subject != w.Subject || g.ID != w.ID || g.Type != w.Type || !g.Time.Equal(w.Time) || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("event %d read back as %+v, want %+v", i, g, w)
		}
	}
	lines := strings.SplitAfter(b.String(), "\n")
	for _, tc := range []struct{ name, text, want string }{
		{"cut", strings.Join(lines[:3], ""), "ends before its end line"},
		{"line removed", lines[0] + lines[2] + lines[3], "counts 3 events, 2 arrived"},
		{"garbage", lines[0] + "not json\n", "line 2"},
	} {
		if _, err := events.ReadRecorded(strings.NewReader(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ReadRecorded = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
