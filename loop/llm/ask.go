package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Ask sends msgs to the routes in order and returns the first non-empty
// answer, the route that gave it and its cost (nil: not reported). A route
// that fails or answers nothing passes to the next, and is reported to
// onFail when set. Used for the harness's own one-shot questions
// (conversation summaries, memory consolidation), not for turns.
func Ask(ctx context.Context, models func(route string) (llms.Model, error), routes []string, msgs []llms.MessageContent,
	onFail func(route string, err error)) (text, route string, cost *float64, err error) {
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
		resp, err := Call(ctx, m, msgs)
		if ctx.Err() != nil {
			return "", "", nil, ctx.Err()
		}
		if err != nil {
			fail(r, err)
			continue
		}
		if len(resp.Choices) == 0 || strings.TrimSpace(resp.Choices[0].Content) == "" {
			fail(r, errors.New("empty reply"))
			continue
		}
		ch := resp.Choices[0]
		if c, ok := ch.GenerationInfo["CostUSD"].(float64); ok {
			cost = &c
		}
		return ch.Content, r, cost, nil
	}
	if len(routes) == 0 {
		failures = append(failures, "the agent has no routes")
	}
	return "", "", nil, fmt.Errorf("every route failed: %s", strings.Join(failures, "; "))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
