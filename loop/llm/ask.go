package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Ask sends req to the routes in order and returns the first non-empty
// answer, with the route that gave it. A route that fails or answers
// nothing passes to the next, and is reported to onFail when set; a budget's
// refusal ends it (no other route is cheaper). Used for the harness's own
// one-shot questions (conversation summaries, memory consolidation), not
// for turns.
func Ask(ctx context.Context, models Models, routes []string, req Request,
	onFail func(route string, err error)) (Answer, error) {
	var failures []string
	fail := func(r string, err error) {
		failures = append(failures, r+": "+firstLine(err.Error()))
		if onFail != nil {
			onFail(r, err)
		}
	}
	for _, r := range routes {
		m, err := models.Model(r)
		if err != nil {
			fail(r, err)
			continue
		}
		start := time.Now()
		req.Route = r
		rep, err := Call(ctx, m, req)
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
		if strings.TrimSpace(rep.Text) == "" {
			fail(r, errors.New("empty reply"))
			continue
		}
		return Answer{Reply: rep, Route: r, Latency: time.Since(start)}, nil
	}
	if len(routes) == 0 {
		failures = append(failures, "the agent has no routes")
	}
	return Answer{}, fmt.Errorf("every route failed: %s", strings.Join(failures, "; "))
}

// Answer is what Ask got: the reply, the route that gave it and how long
// it took.
type Answer struct {
	Reply
	Route   string
	Latency time.Duration
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
