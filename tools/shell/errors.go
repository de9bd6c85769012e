package shell

import "errors"

// ErrNoSandbox means a Command asked for a sandbox this machine cannot
// provide; the command was not run.
var ErrNoSandbox = errors.New("sandbox unavailable")

// ErrNoIsolation means the command could not be put in its own mount and
// PID namespaces (which hide the home and the server's processes); the
// command was not run.
var ErrNoIsolation = errors.New("shell isolation unavailable")
