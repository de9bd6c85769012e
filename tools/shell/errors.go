package shell

import "errors"

// ErrNoSandbox means a Command asked for a sandbox this machine cannot
// provide; the command was not run.
var ErrNoSandbox = errors.New("sandbox unavailable")
