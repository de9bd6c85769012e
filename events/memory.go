package events

import (
	"math"
	"runtime/debug"
)

// MemoryHealth is the memory line of /healthz details: the soft limit the
// Go runtime works to as the process has it now (serve's
// home.Config.MemoryLimit, set at its start, else GOMEMLIMIT's; 0:
// none).
type MemoryHealth struct {
	LimitMB int64 `json:"limit_mb"`
}

// ProcessMemory is the process's MemoryHealth now.
func ProcessMemory() MemoryHealth {
	if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 { // -1 reads it
		return MemoryHealth{LimitMB: limit >> 20}
	}
	return MemoryHealth{}
}
