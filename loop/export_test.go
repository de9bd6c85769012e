package loop

import "github.com/my-agent-crew/crew/loop/llm"

// Estimate is the request size the compaction pipeline counts, for tests.
var Estimate = llm.EstimateTokens
