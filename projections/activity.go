package projections

import (
	"fmt"
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// The activity projection (R-OBS-1, issue 28): the newest job events and
// Telegram messages given up, for the sidebar's activity strip, which a
// tab opened later shows too (the live feed /api/activity carries the same
// events as they happen).
const (
	bucketActivity = "activity"
	activityKeep   = 20 // items kept
)

var activityKey = []byte("recent")

// ActivityItem is one line of the activity strip.
type ActivityItem struct {
	Seq  uint64    `json:"seq"`
	At   time.Time `json:"at"`
	Type string    `json:"type"` // job_fired, job_completed, job_failed, job_skipped, job_retry_scheduled, job_cancelled, telegram_send_failed
	Job  string    `json:"job,omitempty"`
	// Conversation is a job firing's own conversation.
	Conversation string `json:"conversation,omitempty"`
	Text         string `json:"text"`
	Problem      bool   `json:"problem,omitempty"` // a failure the owner should see
}

// Activity keeps the newest activityKeep items.
type Activity struct{}

var _ Projection = Activity{}

func (Activity) Name() string { return "activity" }

// Wants: every job event and the Telegram messages given up.
func (Activity) Wants(kind, typ string) bool {
	return kind == "job" || kind == "tg" && typ == events.TypeTelegramSendFailed
}

func (Activity) Buckets() []string { return []string{bucketActivity} }

func (Activity) Apply(tx *Tx, env events.Envelope) error {
	item, ok, err := ActivityOf(env)
	if err != nil || !ok {
		return err
	}
	b := tx.Bucket([]byte(bucketActivity))
	var items []ActivityItem
	if _, err := tx.getJSON(b, activityKey, &items); err != nil {
		return err
	}
	if n := len(items); n > 0 && items[n-1].Seq >= env.Seq {
		return nil // applied already
	}
	items = append(items, item)
	if len(items) > activityKeep {
		items = items[len(items)-activityKeep:]
	}
	return tx.putJSON(b, activityKey, items)
}

// ActivityOf is the activity line of a job event or a Telegram message
// given up; ok is false for any other event. The live feed names its
// frames by the item's Type: a job_completed is job_failed or job_skipped
// when that is how it ended.
func ActivityOf(env events.Envelope) (ActivityItem, bool, error) {
	scope := events.ScopeOf(env.Subject)
	if scope.Kind() != "job" && !(scope.Kind() == "tg" && env.Type == events.TypeTelegramSendFailed) {
		return ActivityItem{}, false, nil
	}
	e, err := env.Decode()
	if err != nil {
		return ActivityItem{}, false, err
	}
	id := scope.ID()
	it := ActivityItem{Seq: env.Seq, At: env.Time, Type: env.Type, Job: id}
	switch e := e.(type) {
	case *events.JobScheduled:
		it.Text = fmt.Sprintf("Job %s scheduled (%s)", id, e.Origin)
	case *events.JobFired:
		it.Text, it.Conversation = "Job "+id+" started", e.Conversation
		if e.Attempt > 1 {
			it.Text += fmt.Sprintf(" (attempt %d)", e.Attempt)
		}
	case *events.JobCompleted:
		switch e.Status {
		case events.JobFailed:
			it.Type, it.Text, it.Problem = "job_failed", "Job "+id+" failed: "+truncate(e.Error, 160), true
		case events.JobSkipped:
			it.Type, it.Text = "job_skipped", "Job "+id+" skipped (its script printed nothing)"
		default:
			it.Text = "Job " + id + " done"
		}
	case *events.JobRetryScheduled:
		it.Text, it.Problem = fmt.Sprintf("Job %s failed; attempt %d at %s", id, e.Attempt, e.RetryAt.UTC().Format("15:04:05 UTC")), true
	case *events.JobCancelled:
		it.Text = "Job " + id + " cancelled"
	case *events.TelegramSendFailed:
		it.Job = ""
		it.Text = fmt.Sprintf("Telegram gave up a message to chat %d: %d %s", e.Chat, e.Status, truncate(e.Error, 160))
		if e.ChatGone {
			it.Text += " (the chat is gone)"
		}
		it.Problem = true
	default:
		return ActivityItem{}, false, nil
	}
	return it, true, nil
}

// RecentActivity is the activity strip's items, newest first.
func RecentActivity(db *bbolt.DB, n int) ([]ActivityItem, error) {
	var items []ActivityItem
	err := db.View(func(tx *bbolt.Tx) error {
		_, err := getJSON(tx.Bucket([]byte(bucketActivity)), activityKey, &items)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read activity: %w", err)
	}
	out := make([]ActivityItem, 0, min(n, len(items)))
	for i := len(items) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, items[i])
	}
	return out, nil
}
