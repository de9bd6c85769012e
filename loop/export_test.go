package loop

// Estimate is the request size the compaction pipeline counts, for tests.
var Estimate = estimate
