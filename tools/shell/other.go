//go:build !linux

package shell

import (
	"context"
	"errors"
)

// Sandbox says which mechanism sandboxed commands use; none off Linux.
func Sandbox() (mechanism string, ok bool) {
	return "none (only Linux is supported)", false
}

// Run is only implemented on Linux.
func Run(ctx context.Context, c Command) (Output, error) {
	return Output{}, errors.New("shell: only Linux is supported")
}
