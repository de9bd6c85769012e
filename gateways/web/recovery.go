package web

import (
	"fmt"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/projections"
)

// retryLine is how a run card shows one recovery of a model call.
func retryLine(r projections.Retry) string {
	var what string
	switch r.Reason {
	case events.RetryRateLimited:
		what = "rate limited"
	case events.RetryUnavailable:
		what = "unavailable"
	case events.RetryLength:
		what = fmt.Sprintf("reply cut at max_tokens, asked again with max_tokens %d", r.MaxTokens)
	case events.RetryContinue:
		what = "reply still cut at max_tokens, asked to continue where it stopped"
	case events.RetryTooLong:
		what = "prompt too long, compacted further"
	default:
		what = r.Reason
	}
	line := fmt.Sprintf("model_retried: %s %s (attempt %d)", r.Route, what, r.Attempt)
	if r.Error != "" {
		line += ": " + r.Error
	}
	if r.WaitMS > 0 {
		line += fmt.Sprintf(", waited %s", (time.Duration(r.WaitMS) * time.Millisecond).String())
	}
	if r.Interrupted {
		line += fmt.Sprintf("; what it had written was kept, interrupted: %q", r.Text)
	}
	return line
}

// compactionLine is how a run card shows one compaction stage.
func compactionLine(c projections.Compaction) string {
	var what string
	switch c.Stage {
	case events.CompactBudget:
		what = fmt.Sprintf("%d large result(s) shown as a preview", c.Results)
	case events.CompactMicro:
		what = fmt.Sprintf("%d old result(s) replaced by a one-line pointer (tool_output_read)", c.Results)
	case events.CompactRunSummary:
		what = fmt.Sprintf("this run's earlier steps (messages %d–%d) summarised", c.From, c.To-1)
	case events.CompactCut:
		what = "what is kept whole did not fit alone: the largest cut with a marker"
	case events.CompactSnip:
		what = fmt.Sprintf("messages %d–%d archived", c.From, c.To-1)
	case events.CompactSummary:
		what = fmt.Sprintf("messages %d–%d summarised", c.From, c.To-1)
	}
	if c.Asked {
		what += ", asked for by the model (compact)"
	}
	return fmt.Sprintf("context_compacted (%s): %s, ~%d → ~%d tokens (limit %d)", c.Stage, what, c.Before, c.After, c.Limit)
}
