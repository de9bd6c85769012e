package shell

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Sandbox is where every child process an agent's action causes starts
// (shell_run, background tasks, hooks, script jobs, git for worktrees,
// the tool_script and PDF children, stdio MCP servers): it owns what the
// machine offers (probed once, on the first command), the network policy
// of commands with network, and the record of running commands (Track).
// The App builds one per home; two Sandboxes in one process share
// nothing. A nil *Sandbox runs nothing: Run refuses with ErrNoIsolation.
type Sandbox struct {
	probeMu sync.Mutex
	found   *facility // the first probe that found the namespaces

	net *netPolicy // set by New, never changed

	trackDir atomic.Pointer[string] // where running commands are recorded; nil records nothing

	// netUnix lists the server's network namespace's Unix sockets
	// (/proc/self/net/unix; the tests point it elsewhere).
	netUnix string
}

// errNoSandbox is what a nil *Sandbox answers: the caller was built
// without one, so nothing may run.
var errNoSandbox = errors.New("no sandbox was given to start it in")

// New returns a Sandbox whose commands with network reach what n allows
// (config.yaml shell_ports and shell_hosts). A bad n is an error naming
// the setting.
func New(n Network) (*Sandbox, error) {
	p, err := newNetPolicy(n)
	if err != nil {
		return nil, err
	}
	return &Sandbox{net: p, netUnix: "/proc/self/net/unix"}, nil
}
