package events

import (
	"math"
	"runtime/debug"
	"testing"
)

// /healthz's memory line is the runtime's soft limit in MB, 0 for none.
func TestProcessMemoryIsTheRuntimesLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	debug.SetMemoryLimit(96 << 20)
	if got := ProcessMemory(); got.LimitMB != 96 {
		t.Errorf("with a 96 MB limit: %+v, want limit_mb 96", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := ProcessMemory(); got.LimitMB != 0 {
		t.Errorf("with no limit: %+v, want limit_mb 0", got)
	}
}
