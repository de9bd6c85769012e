// Package shelltest gives a test a shell.Sandbox of its own, so no two
// tests (or homes) of one test binary share a network policy or a record
// of running commands. Test code only: no binary links it.
package shelltest

import (
	"testing"

	"github.com/my-agent-crew/crew/tools/shell"
)

// New is a Sandbox of the default network policy (public addresses on
// ports 80 and 443, any host), the test's own.
func New(t testing.TB) *shell.Sandbox {
	t.Helper()
	box, err := shell.New(shell.Network{})
	if err != nil {
		t.Fatal(err)
	}
	return box
}
