package llm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Delta is a piece of a reply while the model writes it, for display only.
// A text delta has Text set; a tool-call delta has ToolName set (and
// ToolCallID once the provider sent it) and carries the next piece of that
// call's JSON arguments. ToolCallIndex is the call's position in the reply.
type Delta struct {
	Text           string `json:"text,omitempty"`
	ToolCallIndex  int    `json:"tool_call_index"`
	ToolCallID     string `json:"tool_call_id,omitempty"`
	ToolName       string `json:"tool_name,omitempty"`
	ArgumentsDelta string `json:"arguments_delta,omitempty"`
}

// deltasKey is our option's key in CallOptions.Metadata (keyed by string,
// so an unexported constant nobody else will spell).
const deltasKey = "github.com/my-agent-crew/crew/loop/llm.deltas"

// WithDeltas delivers text and tool-call argument deltas to f, in order, on
// the calling goroutine, while the reply streams. f must not block for long.
// It rides in CallOptions.Metadata: an llms.WithMetadata given after it
// replaces it.
func WithDeltas(f func(Delta)) llms.CallOption {
	return withMeta(deltasKey, f)
}

func withMeta(key string, v any) llms.CallOption {
	return func(o *llms.CallOptions) {
		// Copy: the map may be the caller's (llms.WithMetadata).
		m := make(map[string]any, len(o.Metadata)+1)
		maps.Copy(m, o.Metadata)
		m[key] = v
		o.Metadata = m
	}
}

// callOptions applies opts. Temperature starts as NaN so that "not set"
// (send nothing: the provider's default) differs from an explicit 0.
func callOptions(opts []llms.CallOption) llms.CallOptions {
	o := llms.CallOptions{Temperature: math.NaN()}
	for _, f := range opts {
		f(&o)
	}
	return o
}

func deltasOf(o llms.CallOptions) func(Delta) {
	if f, ok := o.Metadata[deltasKey].(func(Delta)); ok && f != nil {
		return f
	}
	return func(Delta) {}
}

// Retry policy of Call.
const (
	// MaxRateLimitRetries is how many times Call retries a 429.
	MaxRateLimitRetries = 4
	// maxRetryAfter: a provider asking for a longer wait is treated as
	// down for now, so the loop can move to the next route.
	maxRetryAfter = time.Minute
	backoffBase   = 500 * time.Millisecond
	backoffCap    = 30 * time.Second
)

// Backoff is the wait before retry number attempt (0 for the first retry):
// exponential with full jitter, uniform in [0, min(30s, 500ms·2^attempt)).
// rnd nil uses the process-wide generator.
func Backoff(attempt int, rnd *rand.Rand) time.Duration {
	ceiling := backoffCap
	if attempt < 0 {
		attempt = 0
	}
	if attempt < 16 {
		ceiling = min(backoffCap, backoffBase<<attempt)
	}
	if rnd == nil {
		return time.Duration(rand.Int64N(int64(ceiling)))
	}
	return time.Duration(rnd.Int64N(int64(ceiling)))
}

// Call is m.Call with rate limits absorbed: an ErrRateLimited reply is
// retried up to MaxRateLimitRetries times, waiting the provider's
// Retry-After when given (up to a minute; longer gives up at once) or
// Backoff otherwise. Every other error returns at once: the loop decides
// whether to fall back to the next route. ctx ends the wait.
func Call(ctx context.Context, m Model, req Request) (Reply, error) {
	return callRetrying(ctx, m, req, sleepCtx)
}

// callRetrying is Call waiting with sleep, which must return ctx.Err()
// when ctx ends first.
func callRetrying(ctx context.Context, m Model, req Request, sleep func(context.Context, time.Duration) error) (Reply, error) {
	for attempt := 0; ; attempt++ {
		rep, err := m.Call(ctx, req)
		if err == nil || !errors.Is(err, ErrRateLimited) {
			return rep, err
		}
		if attempt == MaxRateLimitRetries {
			return Reply{}, fmt.Errorf("gave up after %d attempts: %w", attempt+1, err)
		}
		wait, ok := RetryAfter(err)
		if ok && wait > maxRetryAfter {
			return Reply{}, err
		}
		if !ok {
			wait = Backoff(attempt, nil)
		}
		if serr := sleep(ctx, wait); serr != nil {
			return Reply{}, fmt.Errorf("waiting to retry after %v: %w", err, serr)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
