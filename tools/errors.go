package tools

import "errors"

// Sentinel errors, found with errors.Is.
var (
	// ErrOutsideWorkspace: a path resolves outside the workspace. Tools turn
	// it into an error Result.
	ErrOutsideWorkspace = errors.New("path is outside the workspace")
	// ErrNoWorkspace: Env.Workspace is not an absolute path to an existing
	// directory. A harness fault, returned as a Go error.
	ErrNoWorkspace = errors.New("workspace unavailable")
	// ErrDuplicateTool: New was given two tools with the same name.
	ErrDuplicateTool = errors.New("duplicate tool name")
)
