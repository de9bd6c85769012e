package loop_test

import (
	"slices"
	"testing"

	"github.com/my-agent-crew/crew/loop/llm"
)

// Every request sends max_tokens = the route's max_output_tokens
// (config.yaml models:), 4096 when nothing is known.
func TestRecoveryEveryRequestSendsRouteMaxOutputTokens(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {fail(503), fail(503), fail(503), fail(503)}, "fake:b": {say("ok")}})
	out := 777
	cat := llm.NewCatalog(map[string]llm.ModelOverride{"fake:b": {MaxOutputTokens: &out}})
	h.deps.Spec = cat.Lookup
	h.send("hi")
	h.turn()
	if got := h.models["fake:a"].maxTok; len(got) == 0 || got[0] != llm.DefaultMaxOutputTokens {
		t.Errorf("fake:a max_tokens %v, want %d", got, llm.DefaultMaxOutputTokens)
	}
	if got := h.models["fake:b"].maxTok; !slices.Equal(got, []int{777}) {
		t.Errorf("fake:b max_tokens %v, want [777]", got)
	}
}
