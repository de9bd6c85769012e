package scheduler

import "errors"

var (
	// ErrUnknownJob means no job has the id.
	ErrUnknownJob = errors.New("scheduler: no such job")
	// ErrJobExists means Add was given an id already used.
	ErrJobExists = errors.New("scheduler: job id already used")
	// ErrCancelled means the job was cancelled.
	ErrCancelled = errors.New("scheduler: job cancelled")
	// ErrProfileJob means a profile job was asked to be cancelled: those
	// change in agent.yaml.
	ErrProfileJob = errors.New("scheduler: profile jobs change in agent.yaml, not by cancel")
	// ErrInvalidJob means a job definition is incomplete or contradictory.
	ErrInvalidJob = errors.New("scheduler: invalid job")
)
