package loop

import "github.com/my-agent-crew/crew/events"

// A fold is one feature's part of State (issue 33): its fields and its
// own apply, in the feature's file. State.Apply hands every event to each
// fold with what the fold may read of the rest (foldOn); a fold writes
// only its own fields. A new feature adds its fold here and one line in
// State.folds.
type fold interface {
	apply(env events.Envelope, on foldOn)
}

// foldOn is what the folds read of the state outside their own fields, as
// it stood before the event (run_started has not yet moved the queue,
// run_finished has not yet closed the run).
type foldOn struct {
	// open is the open run ("" none).
	open string
	// messages is how many messages the history held.
	messages int
	// queuedTeam: a message the team runtime delivered waits in the
	// queue (run_started moves it into the run).
	queuedTeam bool
	// steers are the steers waiting (steers_applied names which it
	// applies).
	steers []Pending
	// end is how the open run ended, on its run_finished.
	end *RunEnd
}

// on is what the folds read of s for env.
func (s *State) on(e events.Event) foldOn {
	on := foldOn{open: s.OpenRun, messages: len(s.Messages), steers: s.Steers}
	for _, q := range s.Queued {
		on.queuedTeam = on.queuedTeam || q.Team
	}
	if f, ok := e.(*events.RunFinished); ok && f.RunID == s.OpenRun {
		on.end = s.runEnd(f)
	}
	return on
}

// folds are s's feature folds, in the order they apply.
func (s *State) folds() []fold {
	return []fold{&s.Delegation, &s.CanvasMarks, &s.TeamSeat, &s.MCPLoaded, &s.Scripting, &s.OwnerAsks, &s.Spend,
		&s.ForkPin, &s.Untrusted, &s.NotesTold, &s.BackgroundTasks, &s.Stopping, &s.Guarding, &s.Compacting, &s.ShownReplies}
}
