package projections

import (
	"errors"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

func TestJobs(t *testing.T) {
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	due := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	next := due.Add(24 * time.Hour)

	s.add(events.Job("standup"), &events.JobFired{Agent: "coach", Due: due, Conversation: "job-standup-202611300800", Origin: events.OriginProfile})
	s.add(events.Job("standup"), &events.JobCompleted{Status: events.JobOK, NextRun: next})
	s.add(events.Job("remind"), &events.JobScheduled{Agent: "chef", Name: "remind", At: "2026-12-01T09:00:00Z", Prompt: "buy eggs",
		Origin: events.OriginChat, SourceConversation: "c1"})
	s.add(events.Job("check"), &events.JobScheduled{Agent: "ops", Name: "check", Cron: "*/5 * * * *", Script: "df -h", ThenPrompt: "look", Origin: events.OriginChat})
	s.add(events.Job("check"), &events.JobFired{Agent: "ops", Due: due, Origin: events.OriginChat})
	s.add(events.Job("check"), &events.JobCompleted{Status: events.JobFailed, Error: "exit 1", Output: "boom"})
	s.add(events.Job("check"), &events.JobFired{Agent: "ops", Due: due.Add(5 * time.Minute), Origin: events.OriginChat, Manual: true})
	s.add(events.Job("check"), &events.JobCancelled{Reason: "owner asked"})
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "not a job"})

	db := openDB(t, "")
	if err := Rebuild(t.Context(), log, db, Jobs{}); err != nil {
		t.Fatal(err)
	}
	jobs, err := ListJobs(db)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 || jobs[0].ID != "check" || jobs[1].ID != "remind" || jobs[2].ID != "standup" {
		t.Fatalf("jobs = %+v, want check, remind, standup", jobs)
	}

	check := jobs[0]
	if check.Status != JobCancelled || check.CancelReason != "owner asked" || check.Runs != 2 || check.Failures != 1 ||
		!check.LastManual || check.LastStatus != "" || check.Script != "df -h" || check.Cron != "*/5 * * * *" {
		t.Errorf("check = %+v", check)
	}
	remind, err := GetJob(db, "remind")
	if err != nil {
		t.Fatal(err)
	}
	if remind.Status != JobIdle || remind.Origin != events.OriginChat || remind.At != "2026-12-01T09:00:00Z" || remind.Runs != 0 || remind.Scheduled == nil {
		t.Errorf("remind = %+v", remind)
	}
	standup := jobs[2]
	if standup.Status != JobIdle || standup.Agent != "coach" || standup.Origin != events.OriginProfile || standup.LastStatus != events.JobOK ||
		standup.NextRun == nil || !standup.NextRun.Equal(next) || standup.LastDue == nil || !standup.LastDue.Equal(due) ||
		standup.LastConversation != "job-standup-202611300800" {
		t.Errorf("standup = %+v", standup)
	}
	if _, err := GetJob(db, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetJob(nope) = %v, want ErrNotFound", err)
	}

	// Live application writes the same bytes as the rebuild.
	live := openDB(t, "")
	r, err := Open(testCtx(t), log, live, nil, Jobs{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(t.Context())
	last, err := log.Last(t.Context(), events.Root+".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitFor(testCtx(t), last); err != nil {
		t.Fatal(err)
	}
	want, _ := Dump(db, Jobs{})
	got, _ := Dump(live, Jobs{})
	if string(got) != string(want) {
		t.Errorf("live dump differs from rebuild:\n got %s\nwant %s", got, want)
	}
}
