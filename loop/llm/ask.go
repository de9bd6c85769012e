package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Ask sends msgs to the routes in order and returns the first non-empty
// answer, the route that gave it and its cost (nil: not reported). A route
// that fails or answers nothing passes to the next, and is reported to
// onFail when set. Used for the harness's own one-shot questions
// (conversation summaries, memory consolidation), not for turns.
func Ask(ctx context.Context, models func(route string) (llms.Model, error), routes []string, msgs []llms.MessageContent,
	onFail func(route string, err error)) (text, route string, cost *float64, err error) {
	a, err := AskUsage(ctx, models, routes, msgs, onFail)
	return a.Text, a.Route, a.CostUSD, err
}

// Answer is what AskUsage got: the text, the route that gave it, and the
// call's usage as the provider reported it (CostUSD nil: not reported).
type Answer struct {
	Text                      string
	Route                     string
	InputTokens, OutputTokens int
	CostUSD                   *float64
	Latency                   time.Duration
}

// AskUsage is Ask with the answering call's usage, for the harness's own
// calls that record a model_called with their purpose.
func AskUsage(ctx context.Context, models func(route string) (llms.Model, error), routes []string, msgs []llms.MessageContent,
	onFail func(route string, err error)) (Answer, error) {
	var failures []string
	fail := func(r string, err error) {
		failures = append(failures, r+": "+firstLine(err.Error()))
		if onFail != nil {
			onFail(r, err)
		}
	}
	for _, r := range routes {
		m, err := models(r)
		if err != nil {
			fail(r, err)
			continue
		}
		start := time.Now()
		resp, err := Call(ctx, m, msgs)
		if ctx.Err() != nil {
			return Answer{}, ctx.Err()
		}
		if errors.Is(err, ErrBudget) {
			return Answer{}, err // no other route is cheaper for a budget
		}
		if err != nil {
			fail(r, err)
			continue
		}
		if len(resp.Choices) == 0 || strings.TrimSpace(resp.Choices[0].Content) == "" {
			fail(r, errors.New("empty reply"))
			continue
		}
		rep := replyOf(resp)
		return Answer{Text: rep.Text, Route: r, Latency: time.Since(start),
			InputTokens: rep.Usage.Input, OutputTokens: rep.Usage.Output, CostUSD: rep.CostUSD}, nil
	}
	if len(routes) == 0 {
		failures = append(failures, "the agent has no routes")
	}
	return Answer{}, fmt.Errorf("every route failed: %s", strings.Join(failures, "; "))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
