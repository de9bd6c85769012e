package projections

import (
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-CTX-2: the previous conversation is the latest one summarised for the
// same agent on the same channel; a late summary of an older conversation
// does not replace a newer one.
func TestChannelSummariesLatestIsPerAgentAndChannel(t *testing.T) {
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	day1 := time.Date(2026, 11, 28, 23, 30, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)
	s.conv("web-28", &events.ConversationOpened{Agent: "master", Channel: "web", Day: "2026-11-28"})
	s.conv("web-29", &events.ConversationOpened{Agent: "master", Channel: "web", Day: "2026-11-29"})
	s.conv("tg-29", &events.ConversationOpened{Agent: "master", Channel: "telegram:42", Day: "2026-11-29"})
	s.conv("coach-29", &events.ConversationOpened{Agent: "coach", Channel: "web", Day: "2026-11-29"})
	s.conv("web-29", &events.ConversationSummarized{Summary: "web of the 29th", LastAt: day2, ThroughSeq: 9})
	s.conv("web-28", &events.ConversationSummarized{Summary: "web of the 28th, late", LastAt: day1, ThroughSeq: 3})
	s.conv("tg-29", &events.ConversationSummarized{Summary: "telegram", LastAt: day2, ThroughSeq: 11})

	db := openDB(t, "")
	if err := Rebuild(t.Context(), log, db, Summaries{}); err != nil {
		t.Fatal(err)
	}
	sums := ChannelSummaries{DB: db}
	got, ok, err := sums.Latest("master", "web", "web-30")
	if err != nil || !ok || got.Conversation != "web-29" || got.Summary != "web of the 29th" || !got.LastAt.Equal(day2) {
		t.Errorf("master web = %+v %v %v", got, ok, err)
	}
	if got, ok, _ := sums.Latest("master", "telegram:42", "tg-30"); !ok || got.Summary != "telegram" {
		t.Errorf("master telegram = %+v %v", got, ok)
	}
	if _, ok, _ := sums.Latest("coach", "web", "x"); ok {
		t.Error("coach has a summary it never made")
	}
	if _, ok, _ := sums.Latest("master", "web", "web-29"); ok {
		t.Error("a conversation is told its own summary as the previous one")
	}
}
