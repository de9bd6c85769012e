package eventstest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
)

// Populate writes convs conversations of turns turns each through
// events.Append, as a day of use would: conversation_opened, then per turn
// message_received, run_started, model_called and run_finished. It writes
// with several conversations at once (each a single writer) and returns
// the stream's last sequence: the events of a large home for benchmarks
// (1 + 4×turns per conversation).
func Populate(ctx context.Context, log *events.Log, agent string, convs, turns int) (uint64, error) {
	return PopulateFrom(ctx, log, agent, 0, convs, turns)
}

// PopulateFrom is Populate of the conversations numbered first to
// first+convs-1 (Populate's are 0 to convs-1), to add to a populated log.
func PopulateFrom(ctx context.Context, log *events.Log, agent string, first, convs, turns int) (uint64, error) {
	const writers = 16
	ids := make(chan int)
	errc := make(chan error, writers)
	var wg sync.WaitGroup
	day := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	cost := 0.0001
	for range writers {
		wg.Go(func() {
			for i := range ids {
				id := PopulatedID(i)
				envs := []events.Envelope{stamp(events.MustNew(&events.ConversationOpened{Agent: agent, Channel: "web", Title: "conversation " + id}), day)}
				for n := range turns {
					run := fmt.Sprintf("r%06d-%03d", i, n)
					at := day.Add(time.Duration(n) * time.Minute)
					question, answer := PopulatedTurn(n)
					envs = append(envs,
						stamp(events.MustNew(&events.MessageReceived{Channel: "web", Text: question}), at),
						stamp(events.MustNew(&events.RunStarted{RunID: run, Agent: agent, Trigger: "message"}), at),
						stamp(events.MustNew(&events.ModelCalled{RunID: run, Step: 1, Route: "fake", Model: "fake:echo",
							Text: answer, InputTokens: 900, OutputTokens: 40, CostUSD: &cost, LatencyMS: 800}), at),
						stamp(events.MustNew(&events.RunFinished{RunID: run, Status: events.RunDone}), at),
					)
				}
				if _, err := log.Append(ctx, events.Conv(id), 0, envs...); err != nil {
					errc <- fmt.Errorf("populate %s: %w", id, err)
					return
				}
			}
		})
	}
	var err error
feed:
	for i := first; i < first+convs; i++ {
		select {
		case ids <- i:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(ids)
	wg.Wait()
	close(errc)
	if err == nil {
		err = <-errc
	}
	if err != nil {
		return 0, err
	}
	return log.Last(ctx, events.Root+".>")
}

// PopulatedID is the id of conversation i of Populate's.
func PopulatedID(i int) string { return fmt.Sprintf("c%06d", i) }

// PopulatedTurn is the owner's question and the model's answer of turn n
// (from 0) of each conversation Populate writes: what its history holds.
func PopulatedTurn(n int) (question, answer string) {
	return fmt.Sprintf("Question %d: what should I eat before tomorrow's run? Keep it simple.", n),
		"Oats with a banana two hours before, water, and nothing new on race day."
}

func stamp(env events.Envelope, at time.Time) events.Envelope {
	env.Time = at
	return env
}
