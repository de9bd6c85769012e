package events

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The doors answer 503 with Retry-After only for a store that refused for
// room or did not answer; a conflict, a bad event or the caller's own
// cancellation are not that (the full stream itself: cmd/crew/app
// TestInboundAnswers503WithRetryAfterWhenTheStoreIsFull).
func TestStoreErrorSortsTheServersAnswers(t *testing.T) {
	api := func(code jetstream.ErrorCode, desc string) error {
		return fmt.Errorf("append x: %w", &jetstream.APIError{Code: 503, ErrorCode: code, Description: desc})
	}
	for _, c := range []struct {
		name string
		err  error
		want error // nil: left as it is
	}{
		{"max messages", api(jsStoreFailed, "maximum messages exceeded"), ErrStoreFull},
		{"max bytes", api(jsStoreFailed, "maximum bytes exceeded"), ErrStoreFull},
		{"disk", api(jsStorageResourcesExceeded, "insufficient storage resources available"), ErrStoreFull},
		{"too many requests", api(jsTooManyRequests, "too many requests"), ErrStoreUnavailable},
		{"no leader", api(jsClusterNotAvailable, "JetStream system temporarily unavailable"), ErrStoreUnavailable},
		{"timeout", fmt.Errorf("append x: %w", context.DeadlineExceeded), ErrStoreUnavailable},
		{"no responders", fmt.Errorf("append x: %w", nats.ErrNoResponders), ErrStoreUnavailable},
		{"other store failure", api(jsStoreFailed, "some io error"), nil},
		{"conflict", &ConflictError{Subject: "x", Err: api(10071, "wrong last sequence: 4")}, nil},
		{"too large", fmt.Errorf("append x: %w", ErrTooLarge), nil},
	} {
		got := storeError(context.Background(), c.err)
		for _, kind := range []error{ErrStoreFull, ErrStoreUnavailable} {
			if errors.Is(got, kind) != (kind == c.want) {
				t.Errorf("%s: errors.Is(%v, %v) = %v", c.name, got, kind, errors.Is(got, kind))
			}
		}
		if !errors.Is(got, c.err) && got != c.err {
			t.Errorf("%s: the server's answer is lost: %v", c.name, got)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := storeError(ctx, context.Canceled); errors.Is(err, ErrStoreUnavailable) {
		t.Error("the caller's own cancellation taken for a silent store")
	}
}
