package llm_test

import (
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/loop/llm"
)

// The UI's banner says fake:echo is a fallback only when Override fell
// back to it: a fake:echo the owner chose, and a real route, show none.
func TestBannerOnlyForTheFakeEchoFallback(t *testing.T) {
	env := func(routes string) func(string) string {
		return func(k string) string {
			if k == "MY_AGENT_ROUTES" {
				return routes
			}
			return ""
		}
	}
	for _, c := range []struct {
		name     string
		override []string
		routes   string
		want     bool
	}{
		{"fallback", []string{"fake:echo"}, "", true},
		{"chosen fake:echo", []string{"fake:echo"}, "fake:echo", false},
		{"providers", nil, "", false},
		{"chosen route", []string{"openrouter:x/y"}, "openrouter:x/y", false},
		{"two routes", []string{"fake:echo", "fake:echo"}, "", false},
	} {
		got := llm.Banner(c.override, env(c.routes))
		if (got != "") != c.want || c.want && !strings.Contains(got, "OPENROUTER_API_KEY") {
			t.Errorf("%s: Banner(%v, MY_AGENT_ROUTES=%q) = %q, want banner %v", c.name, c.override, c.routes, got, c.want)
		}
	}
}
