package events

import (
	"reflect"
	"testing"
)

// Every registered payload with a RunID field answers RunOf with it, and no
// other does: a new event type cannot be forgotten.
func TestRunOfCoversEveryPayloadWithRunID(t *testing.T) {
	for _, e := range Registered() {
		typ := e.EventType()
		v := reflect.ValueOf(e).Elem()
		f := v.FieldByName("RunID")
		if f.IsValid() {
			f.SetString("r-" + typ)
		}
		got, ok := RunOf(e)
		switch {
		case f.IsValid() && (!ok || got != "r-"+typ):
			t.Errorf("%s has a RunID but RunOf = %q, %v", typ, got, ok)
		case !f.IsValid() && ok:
			t.Errorf("%s has no RunID but RunOf = %q, true", typ, got)
		}
	}
}

func TestDelegateSpent(t *testing.T) {
	usd := 0.25
	for _, tc := range []struct {
		name        string
		d           DelegateResult
		wantUSD     float64
		wantUnknown int
	}{
		{"known", DelegateResult{CostUSD: &usd}, 0.25, 0},
		{"known and unknown calls", DelegateResult{CostUSD: &usd, UnknownCostCalls: 2}, 0.25, 2},
		{"only unknown calls", DelegateResult{UnknownCostCalls: 3}, 0, 3},
		{"recorded before the count existed", DelegateResult{}, 0, 1},
	} {
		gotUSD, gotUnknown := tc.d.Spent()
		if gotUSD != tc.wantUSD || gotUnknown != tc.wantUnknown {
			t.Errorf("%s: Spent() = %v, %d; want %v, %d", tc.name, gotUSD, gotUnknown, tc.wantUSD, tc.wantUnknown)
		}
	}
}
