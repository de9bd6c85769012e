package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/web"
)

// R-OBS-1, issue 28: a job's events (started, failed, retried, done) and
// a Telegram message given up (telegram_send_failed) reach /api/activity
// as they are stored — a failed job_completed as job_failed — and the
// sidebar's activity strip, also in a tab opened afterwards.
func TestJobEventsAndTelegramGiveUpsOnActivityFeedAndStrip(t *testing.T) {
	h := newHarness(t)
	log := h.log
	url := h.serve(t, web.Config{Pages: h.pages()})

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/activity", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Scan() // ": live": the feed follows from here

	due := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	seq := uint64(0)
	for _, e := range []events.Event{
		&events.JobFired{Agent: "chef", Due: due, Conversation: "job-chef-eggs-202612020700", Origin: events.OriginChat},
		&events.JobCompleted{Status: events.JobFailed, Error: "failed: model unavailable"},
		&events.JobRetryScheduled{Attempt: 2, RetryAt: due.Add(10 * time.Second), Error: "failed: model unavailable"},
		&events.JobFired{Agent: "chef", Due: due, Conversation: "job-chef-eggs-202612020700-r2", Origin: events.OriginChat, Attempt: 2},
		&events.JobCompleted{Status: events.JobOK},
	} {
		stored, err := log.Append(t.Context(), events.Job("chef-eggs"), seq, events.MustNew(e))
		if err != nil {
			t.Fatal(err)
		}
		seq = stored[0].Seq
	}
	if _, err := log.Append(t.Context(), events.Telegram("bot1"), events.Any, events.MustNew(&events.TelegramSendFailed{WantedSeq: 3, Chat: 42, Status: 403, Error: "Forbidden: bot was blocked by the user", ChatGone: true})); err != nil {
		t.Fatal(err)
	}
	want := []string{"job_fired", "job_failed", "job_retry_scheduled", "job_fired", "job_completed", "telegram_send_failed"}
	var got []string
	var last map[string]any
	for len(got) < len(want) && sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			got = append(got, name)
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			last = nil
			json.Unmarshal([]byte(data), &last)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("activity frames %v, want %v", got, want)
	}
	for sc.Scan() && last["type"] != "telegram_send_failed" {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			json.Unmarshal([]byte(data), &last)
		}
	}
	if last["bot"] != "bot1" || !strings.Contains(last["text"].(string), "chat 42") {
		t.Errorf("the telegram_send_failed frame = %v", last)
	}

	// The strip: a sidebar drawn now (a tab opened later) lists them,
	// newest first, the give-up and the failure marked as problems.
	var page string
	eventstest.Eventually(t, "the sidebar's activity strip", func() bool {
		r, err := http.Get(url + "/fragments/sidebar")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		page = string(b)
		return strings.Contains(page, "Telegram gave up a message to chat 42")
	})
	for _, line := range []string{`data-testid="activity-strip"`, `data-type="telegram_send_failed"`, "(the chat is gone)",
		`data-type="job_completed"`, "Job chef-eggs done", "Job chef-eggs started (attempt 2)", "Job chef-eggs failed; attempt 2 at 07:00:10 UTC"} {
		if !strings.Contains(page, line) {
			t.Errorf("the sidebar lacks %q", line)
		}
	}
	if strings.Index(page, "Telegram gave up") > strings.Index(page, "Job chef-eggs done") {
		t.Errorf("the strip is not newest first")
	}
}
