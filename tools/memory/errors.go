package memory

import "errors"

// ErrNoDir: Env.AgentDir or Env.HomeDir is empty, relative or not an
// existing directory. A harness fault, returned by the tools as a Go error.
var ErrNoDir = errors.New("memory folder unavailable")
