//go:build !linux

package shell

import (
	"context"
	"errors"
)

// Protections reports that no protection is given off Linux.
func (s *Sandbox) Protections() []Protection {
	var ps []Protection
	for _, n := range []string{"mount namespace", "PID namespace", "Landlock", "network namespace", "Unix-socket block", "shell network"} {
		ps = append(ps, Protection{Name: n, Detail: "no (only Linux is supported): shell commands are refused"})
	}
	return ps
}

// Track records nothing off Linux, where no command runs.
func (s *Sandbox) Track(dir string) (int, error) { return 0, nil }

// Run is only implemented on Linux.
func (s *Sandbox) Run(ctx context.Context, c Command) (Output, error) {
	return Output{}, errors.New("shell: only Linux is supported")
}

// facility is what the machine offers: nothing, off Linux.
type facility struct{}
