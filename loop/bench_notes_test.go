package loop_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/notes"
)

// BenchmarkOpeningMessage: what storing an owner's message costs with the
// turn notes computed in the same step (two 40-line daily notes read,
// digested and compared with what the conversation was told, one line
// added between messages) beside the same append with no opener. The
// plain run's file writes are the same, so the difference is the notes.
func BenchmarkOpeningMessage(b *testing.B) {
	for _, withNotes := range []bool{false, true} {

		name := "plain"
		if withNotes {
			name = "turn_notes"
		}
		b.Run(name, func(b *testing.B) {
			_, log := eventstest.Start(b)
			dir := b.TempDir()
			now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
			lines := strings.Repeat("- 08:00 something worth remembering about the day\n", 40)
			os.MkdirAll(filepath.Join(dir, "memory"), 0o700)
			os.WriteFile(filepath.Join(dir, "memory", "2026-11-29.md"), []byte(lines), 0o600)
			today := filepath.Join(dir, "memory", "2026-11-30.md")
			os.WriteFile(today, []byte(lines), 0o600)
			convs := loop.NewConvs(log, nil)
			if withNotes {
				convs.SetOpener(func(ctx context.Context, o loop.Opening) loop.Opened {
					items, err := notes.Items(dir, now, time.UTC, notes.Summary{})
					if err != nil {
						b.Fatal(err)
					}
					return loop.Opened{Notes: notes.Compose(o.Told, items)}
				})
			}
			ctx := context.Background()
			conv, err := convs.Get(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				// A day's note stays 40-80 lines: one line is added per
				// message, and every 40 messages the note starts again.
				i++
				if i%40 == 0 {
					os.WriteFile(today, []byte(lines), 0o600)
				} else {
					f, _ := os.OpenFile(today, os.O_APPEND|os.O_WRONLY, 0o600)
					fmt.Fprintf(f, "- 09:%02d note %d\n", i%60, i)
					f.Close()
				}
				_, err := conv.Append(ctx, func(st *loop.State) ([]events.Event, error) {
					var evs []events.Event
					if st.Agent == "" {
						evs = append(evs, &events.ConversationOpened{Agent: "master", Channel: "web"})
					}
					return append(evs, &events.MessageReceived{Channel: "web", Text: "what now?"}), nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
