package llm_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/loop/llm"
)

// sleeps records the waits Call asks for and never waits.
type sleeps struct{ got []time.Duration }

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.got = append(s.got, d)
	return ctx.Err()
}

func TestCallRetriesRateLimitHonouringRetryAfter(t *testing.T) {
	s := newChatServer(t,
		status(429, `{"error":{"message":"rate limited"}}`, "Retry-After", "7"),
		status(429, `{"error":{"message":"rate limited"}}`),
		sse(textChunk("finally"), finishChunk("stop")),
	)
	var w sleeps
	rep, err := llm.CallSleeping(t.Context(), llm.FromLangchain(openrouter(t, s)), ask("hi"), w.sleep)
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Text; c != "finally" {
		t.Errorf("content %q", c)
	}
	if len(w.got) != 2 || w.got[0] != 7*time.Second || w.got[1] < 0 || w.got[1] >= time.Second {
		t.Errorf("waits %v, want [7s, backoff(1) in [0,1s)]", w.got)
	}
	if n := len(s.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestCallGivesUpAfterFourRetries(t *testing.T) {
	limited := status(429, `{"error":{"message":"rate limited"}}`)
	s := newChatServer(t, limited, limited, limited, limited, limited, limited)
	var w sleeps
	_, err := llm.CallSleeping(t.Context(), llm.FromLangchain(openrouter(t, s)), ask("hi"), w.sleep)
	if !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("error %v, want ErrRateLimited", err)
	}
	if n := len(s.requests()); n != 1+llm.MaxRateLimitRetries {
		t.Errorf("%d requests, want %d", n, 1+llm.MaxRateLimitRetries)
	}
	if len(w.got) != llm.MaxRateLimitRetries {
		t.Errorf("%d waits, want %d", len(w.got), llm.MaxRateLimitRetries)
	}
}

func TestCallReturnsOtherErrorsAtOnce(t *testing.T) {
	for _, code := range []int{500, 401, 400} {
		s := newChatServer(t, status(code, `{}`), sse(textChunk("never"), finishChunk("stop")))
		var w sleeps
		_, err := llm.CallSleeping(t.Context(), llm.FromLangchain(openrouter(t, s)), ask("hi"), w.sleep)
		if err == nil || len(w.got) != 0 || len(s.requests()) != 1 {
			t.Errorf("HTTP %d: err %v after %d waits and %d requests, want one failed request", code, err, len(w.got), len(s.requests()))
		}
	}
}

func TestCallStopsWaitingWhenContextEnds(t *testing.T) {
	s := newChatServer(t, status(429, `{}`), sse(textChunk("never"), finishChunk("stop")))
	ctx, cancel := context.WithCancel(t.Context())
	_, err := llm.CallSleeping(ctx, llm.FromLangchain(openrouter(t, s)), ask("hi"), func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestCallTooLongRetryAfterGivesUp(t *testing.T) {
	s := newChatServer(t, status(429, `{}`, "Retry-After", "3600"))
	var w sleeps
	_, err := llm.CallSleeping(t.Context(), llm.FromLangchain(openrouter(t, s)), ask("hi"), w.sleep)
	if !errors.Is(err, llm.ErrRateLimited) || len(w.got) != 0 {
		t.Errorf("err %v after waits %v, want ErrRateLimited at once", err, w.got)
	}
}

func TestBackoffFullJitterCapped(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for attempt := -1; attempt < 70; attempt++ {
		ceiling := 30 * time.Second
		if attempt < 6 {
			ceiling = 500 * time.Millisecond << max(attempt, 0)
		}
		var hi time.Duration
		for range 200 {
			d := llm.Backoff(attempt, rnd)
			if d < 0 || d >= ceiling {
				t.Fatalf("Backoff(%d) = %v, want in [0, %v)", attempt, d, ceiling)
			}
			hi = max(hi, d)
		}
		if hi < ceiling/2 {
			t.Errorf("Backoff(%d): largest of 200 draws %v, not jittered over [0, %v)", attempt, hi, ceiling)
		}
	}
	if d := llm.Backoff(3, nil); d < 0 || d >= 4*time.Second {
		t.Errorf("Backoff(3, nil) = %v", d)
	}
}
