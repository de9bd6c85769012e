package shell

import (
	"errors"
	"fmt"
)

// ErrNoSandbox means a Command asked for a sandbox this machine cannot
// provide; the command was not run.
var ErrNoSandbox = errors.New("sandbox unavailable")

// ErrNoIsolation means the command could not be put in its own mount and
// PID namespaces (which hide the home and the server's processes); the
// command was not run.
var ErrNoIsolation = errors.New("shell isolation unavailable")

// ErrNoNetwork means the command could not get a network namespace of its
// own (whose only way out is the crew's proxy), which every command runs
// in; the command was not run. It is an ErrNoIsolation too.
var ErrNoNetwork = fmt.Errorf("%w: no network namespace of its own", ErrNoIsolation)
