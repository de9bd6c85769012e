package events

// TypeRunStopRequested is the owner's stop (issue 27): stored on the
// conversation before it takes effect, so a crash after it closes the run
// stopped on restart instead of resuming it.
const TypeRunStopRequested = "run_stop_requested"

func init() { register[RunStopRequested]() }

// RunStatusStopped closes a run the owner stopped (reason
// StoppedByOwner, By who).
const (
	RunStopped     = "stopped"
	StoppedByOwner = "stopped_by_owner"
)

// Who stopped: the channel the owner's stop came through.
const (
	StopByWeb      = "web"
	StopByAPI      = "api"
	StopByTelegram = "telegram"
	StopByCLI      = "cli"
	StopByMCP      = "mcp"
)

// Stop scopes: the running turn (and the delegated children under it), the
// messages waiting behind it, or both.
const (
	StopRun   = "run"
	StopQueue = "queue"
	StopAll   = "all"
)

// DecisionWithdrawn settles an approval whose run was stopped: nothing ran.
const DecisionWithdrawn = "withdrawn"

// RunStopRequested asks the conversation's open run (RunID, empty when
// only the queue is stopped) to stop at once; Dropped are the event ids of
// the waiting messages it drops (scope queue or all), each shown
// "dropped" in the chat and never answered; Tasks are the conversation's
// background tasks still running that it kills (scope run or all).
type RunStopRequested struct {
	RunID   string   `json:"run_id,omitempty"`
	By      string   `json:"by"`
	Scope   string   `json:"scope"`
	Dropped []string `json:"dropped,omitempty"`
	Tasks   []string `json:"tasks,omitempty"`
}

func (*RunStopRequested) EventType() string { return TypeRunStopRequested }
func (*RunStopRequested) EventVersion() int { return 1 }

func (e *RunStopRequested) runOf() string { return e.RunID }
