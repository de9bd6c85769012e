// Package view holds the shapes in which the loop and its services
// answer the doors: what a stop did, a background task, the worker's
// counters, a team as its page shows it. They live here, below both, so
// that gateways/web renders and decodes them without importing the loop;
// the loop's packages keep their names for them as aliases (loop.Stopped
// is view.Stopped, team.View is view.Team).
package view

import (
	"time"

	"github.com/my-agent-crew/crew/events"
)

// Stopped is what Worker.Stop did: the run it stopped ("" when none) and
// how many waiting messages it dropped.
type Stopped struct {
	RunID   string `json:"run_id"`
	Dropped int    `json:"dropped"`
	// Tasks are the background tasks it stopped (scope run or all).
	Tasks []string `json:"tasks,omitempty"`
}

// Task is one background task as the task list shows it.
type Task struct {
	ID       string    `json:"id"`
	Command  string    `json:"command"`
	Started  time.Time `json:"started"`
	State    string    `json:"state"` // running, stopping, exited, failed, stopped
	RunID    string    `json:"run_id,omitempty"`
	ExitCode *int      `json:"exit_code,omitempty"`
	Failure  string    `json:"failure,omitempty"`
	// StoppedBy: who stopped it (or asked to, while stopping).
	StoppedBy string     `json:"stopped_by,omitempty"`
	Ended     *time.Time `json:"ended,omitempty"`
	// OutputTail is the end of what it printed: live while it runs in this
	// process, from its notification once it ended (secrets redacted).
	OutputTail string `json:"output_tail"`
}

// WorkerStats is what /healthz and doctor show of the worker.
type WorkerStats struct {
	// FailedPasses counts the passes that failed since the worker
	// started (each is logged at warn with its error, then retried or its
	// run closed).
	FailedPasses uint64 `json:"failed_passes"`
	// InFlight counts the passes running now, at most Limit
	// (turns_in_flight); Queued the conversations waiting for one of
	// them, in order; Retrying those waiting to retry a failed pass.
	InFlight int `json:"in_flight"`
	Limit    int `json:"limit"`
	Queued   int `json:"queued"`
	Retrying int `json:"retrying"`
}

// ClusterStats is what /healthz and doctor show of a crew process on a
// shared cluster (gateways/cluster).
type ClusterStats struct {
	// AdoptFailures counts the looks for conversations with work that no
	// process holds (every 10 s) that could not read the projections'
	// list of them since start; each is logged at warn, and the next
	// look tries again. LastAdoptError is the last one's error.
	AdoptFailures  uint64 `json:"adopt_failures"`
	LastAdoptError string `json:"last_adopt_error,omitempty"`
}

// Forked is a fork made (loop.Forker): its conversation and run, where
// it was copied from and the route it runs on.
type Forked struct {
	Conversation string            `json:"conversation"`
	RunID        string            `json:"run_id"`
	From         events.ForkOrigin `json:"from"`
	Route        string            `json:"route"`
}
