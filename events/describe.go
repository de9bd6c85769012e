package events

import (
	"context"
	"fmt"
)

// Describe is doctor's line on the log's stream — how many events it
// holds, their size and their sequences — and last, its last sequence.
func (l *Log) Describe(ctx context.Context) (line string, last uint64, err error) {
	si, err := l.stream.Info(ctx)
	if err != nil {
		return "", 0, fmt.Errorf("stream %s: %w", StreamName, err)
	}
	st := si.State
	return fmt.Sprintf("  stream %s: %d events, %s, sequences %d..%d", StreamName, st.Msgs, HumanBytes(int64(st.Bytes)), st.FirstSeq, st.LastSeq), st.LastSeq, nil
}

// HumanBytes writes n in B, KiB, MiB or GiB, as doctor's lines give sizes.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
