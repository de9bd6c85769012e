package loop

import "github.com/my-agent-crew/crew/loop/llm"

// Estimate is the request size the compaction pipeline counts, for tests.
var Estimate = llm.EstimateTokens

// OnStored has f run between a task's task_started stored and its start.
func (b *Background) OnStored(f func(id string)) { b.stored = f }

// Listed is how many tasks b holds in memory.
func (b *Background) Listed() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.tasks)
}

// Closing says whether Close has begun on b.
func (b *Background) Closing() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}
