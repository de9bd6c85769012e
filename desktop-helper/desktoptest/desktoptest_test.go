package desktoptest

import (
	"errors"
	"sync"
	"testing"
)

// TestSessionsStartedAtOnceEachGetTheirOwnDisplay: test binaries run in
// parallel (go test ./...), so two sessions starting at the same moment
// must not share a display, and each one's app must open it.
func TestSessionsStartedAtOnceEachGetTheirOwnDisplay(t *testing.T) {
	var wg sync.WaitGroup
	sess := make([]*Session, 3)
	errs := make([]error, 3)
	for i := range sess {
		wg.Go(func() {
			s, err := Start()
			sess[i], errs[i] = s, err
			if err == nil {
				_, errs[i] = s.StartFactory()
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, s := range sess {
		if s != nil {
			defer s.Stop()
		}
		if errors.Is(errs[i], ErrMissing) && !Required() {
			t.Skip(errs[i].Error())
		}
		if errs[i] != nil {
			t.Fatalf("session %d: %v", i, errs[i])
		}
		if seen[s.Display] {
			t.Fatalf("two sessions on display %s", s.Display)
		}
		seen[s.Display] = true
	}
}
