package web

import (
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/projections"
)

// R-LOOP-7: the run card names every compaction stage with its tokens
// before and after and the limit, and says when the model asked for it.
func TestRunCardShowsCompactionStages(t *testing.T) {
	for _, tt := range []struct {
		c    projections.Compaction
		want string
	}{
		{projections.Compaction{Stage: events.CompactBudget, Results: 1, Before: 5000, After: 3000, Limit: 3200}, "1 large result(s) shown as a preview, ~5000 → ~3000 tokens (limit 3200)"},
		{projections.Compaction{Stage: events.CompactMicro, Results: 2, Before: 3300, After: 2500, Limit: 3200}, "2 old result(s) replaced by a one-line pointer"},
		{projections.Compaction{Stage: events.CompactRunSummary, From: 3, To: 40, Before: 3300, After: 1500, Limit: 3200}, "this run's earlier steps (messages 3–39) summarised"},
		{projections.Compaction{Stage: events.CompactSummary, From: 0, To: 12, Before: 3300, After: 1500, Limit: 3200, Asked: true}, "messages 0–11 summarised, asked for by the model (compact)"},
		{projections.Compaction{Stage: events.CompactCut, Results: 1, Before: 3300, After: 2500, Limit: 3200}, "the largest cut with a marker"},
	} {
		got := compactionLine(tt.c)
		if !strings.HasPrefix(got, "context_compacted ("+tt.c.Stage+")") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want it to say %q", tt.c.Stage, got, tt.want)
		}
	}
}
