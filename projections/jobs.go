package projections

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// Job statuses.
const (
	JobIdle      = "idle"      // scheduled, not firing
	JobRunning   = "running"   // fired, not completed
	JobCancelled = "cancelled" // stopped by JobCancelled
	JobRetrying  = "retrying"  // a one-shot's firing failed; it fires again at RetryAt
)

// outputRunes bounds the stored output of a job's last firing.
const outputRunes = 2000

// bucketJobs maps job id → Job.
const bucketJobs = "jobs"

// Job is the view of one scheduled job. A profile job (agent.yaml) has no
// JobScheduled event: its definition fields stay empty until the gateway
// merges them from the configuration; only its firings are projected.
type Job struct {
	ID                 string     `json:"id"`
	Agent              string     `json:"agent,omitempty"`
	Name               string     `json:"name,omitempty"`
	Origin             string     `json:"origin,omitempty"`
	Cron               string     `json:"cron,omitempty"`
	At                 string     `json:"at,omitempty"`
	Prompt             string     `json:"prompt,omitempty"`
	Command            string     `json:"command,omitempty"`
	Script             string     `json:"script,omitempty"`
	ThenPrompt         string     `json:"then_prompt,omitempty"`
	ApprovalTTLSeconds int        `json:"approval_ttl_seconds,omitempty"`
	SourceConversation string     `json:"source_conversation,omitempty"`
	Scheduled          *time.Time `json:"scheduled,omitempty"` // time of JobScheduled
	Status             string     `json:"status"`
	// LastFired is when the last firing was stored; LastDue the time it
	// was due (a catch-up after downtime fires late).
	LastFired        *time.Time `json:"last_fired,omitempty"`
	LastDue          *time.Time `json:"last_due,omitempty"`
	LastManual       bool       `json:"last_manual,omitempty"`
	LastConversation string     `json:"last_conversation,omitempty"`
	LastStatus       string     `json:"last_status,omitempty"` // events.JobOK, JobFailed, JobSkipped
	LastOutput       string     `json:"last_output,omitempty"`
	LastError        string     `json:"last_error,omitempty"`
	LastCompleted    *time.Time `json:"last_completed,omitempty"`
	NextRun          *time.Time `json:"next_run,omitempty"`
	// Enabled: the job runs (a schedule not written enabled: false, a chat
	// job not cancelled); set by the API's list, not stored.
	Enabled bool `json:"enabled"`
	// LastAttempt is the last firing's attempt (1 the first; a one-shot
	// retried counts up to 4); RetryAt and RetryAttempt the retry pending
	// after a failure (nil, 0: none).
	LastAttempt  int        `json:"last_attempt,omitempty"`
	RetryAt      *time.Time `json:"retry_at,omitempty"`
	RetryAttempt int        `json:"retry_attempt,omitempty"`
	Runs         int        `json:"runs"`     // firings
	Failures     int        `json:"failures"` // completions with status failed
	Cancelled    *time.Time `json:"cancelled,omitempty"`
	CancelReason string     `json:"cancel_reason,omitempty"`
	LastSeq      uint64     `json:"last_seq"`
}

// Jobs projects crew.job.* events into Job views.
type Jobs struct{}

var _ Projection = Jobs{}

func (Jobs) Name() string { return "jobs" }

// Wants: every job event.
func (Jobs) Wants(kind, _ string) bool { return kind == "job" }

func (Jobs) Buckets() []string { return []string{bucketJobs} }

func (Jobs) Apply(tx *Tx, env events.Envelope) error {
	scope := events.ScopeOf(env.Subject)
	if scope.Kind() != "job" || scope.ID() == "" {
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	id := scope.ID()
	b := tx.Bucket([]byte(bucketJobs))
	j := Job{ID: id, Status: JobIdle}
	if _, err := tx.getJSON(b, []byte(id), &j); err != nil {
		return err
	}
	t := env.Time
	switch e := e.(type) {
	case *events.JobScheduled:
		j.Agent, j.Name, j.Origin = e.Agent, e.Name, e.Origin
		j.Cron, j.At = e.Cron, e.At
		j.Prompt, j.Command, j.Script, j.ThenPrompt = e.Prompt, e.Command, e.Script, e.ThenPrompt
		j.ApprovalTTLSeconds, j.SourceConversation = e.ApprovalTTLSeconds, e.SourceConversation
		j.Scheduled = &t
		if j.Cancelled == nil {
			j.Status = JobIdle
		}
	case *events.JobFired:
		due := e.Due
		j.LastFired, j.LastDue, j.LastManual, j.LastConversation = &t, &due, e.Manual, e.Conversation
		if j.Agent == "" {
			j.Agent = e.Agent
		}
		if j.Origin == "" {
			j.Origin = e.Origin
		}
		j.LastStatus, j.LastOutput, j.LastError, j.LastCompleted = "", "", "", nil
		j.LastAttempt, j.RetryAt, j.RetryAttempt = max(e.Attempt, 1), nil, 0
		j.Runs++
		if j.Cancelled == nil {
			j.Status = JobRunning
		}
	case *events.JobCompleted:
		j.LastStatus, j.LastOutput, j.LastError = e.Status, truncate(e.Output, outputRunes), e.Error
		j.LastCompleted = &t
		j.NextRun = nil
		if !e.NextRun.IsZero() {
			next := e.NextRun
			j.NextRun = &next
		}
		if e.Status == events.JobFailed {
			j.Failures++
		}
		if j.Cancelled == nil {
			j.Status = JobIdle
		}
	case *events.JobRetryScheduled:
		at := e.RetryAt
		j.RetryAt, j.RetryAttempt = &at, e.Attempt
		if j.Cancelled == nil {
			j.Status = JobRetrying
		}
	case *events.JobCancelled:
		j.Cancelled, j.CancelReason, j.Status, j.NextRun = &t, e.Reason, JobCancelled, nil
		j.RetryAt, j.RetryAttempt = nil, 0
	default:
		return nil
	}
	j.LastSeq = env.Seq
	return tx.putJSON(b, []byte(id), j)
}

// ListJobs returns every projected job in id order.
func ListJobs(db *bbolt.DB) ([]Job, error) {
	var out []Job
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketJobs))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var j Job
			if err := json.Unmarshal(v, &j); err != nil {
				return fmt.Errorf("decode job %q: %w", k, err)
			}
			out = append(out, j)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

// GetJob returns job id, or ErrNotFound.
func GetJob(db *bbolt.DB, id string) (Job, error) {
	return get[Job](db, bucketJobs, "job", id)
}
