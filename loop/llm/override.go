package llm

import (
	"context"
	"strings"
)

// Override decides whether every agent's routes are overridden:
// MY_AGENT_ROUTES (read with getenv) overrides; with no OpenRouter key and
// no reachable Ollama, everything runs on fake:echo. note says which, for
// the one starting the server.
func Override(ctx context.Context, providers *Providers, getenv func(string) string) (override []string, note string, err error) {
	if env := getenv("MY_AGENT_ROUTES"); env != "" {
		rs, err := RoutesFromEnv(getenv)
		if err != nil {
			return nil, "", err
		}
		for _, r := range rs {
			override = append(override, r.String())
		}
		return override, "models: MY_AGENT_ROUTES=" + env + " overrides every agent", nil
	}
	usable, why := providers.Available(ctx)
	if len(usable) == 0 {
		return []string{"fake:echo"}, "models: no OPENROUTER_API_KEY and no reachable Ollama: every agent runs on fake:echo (it repeats your message). " + why, nil
	}
	return nil, "models: " + strings.Join(usable, ", ") + " available", nil
}

// Banner is the line the UI shows at the top when Override fell back to
// fake:echo (override is its answer, getenv what it read): no model is
// configured, so the owner is told how to get one. A fake:echo chosen by
// MY_AGENT_ROUTES, or any other route, shows none.
func Banner(override []string, getenv func(string) string) string {
	if len(override) == 1 && override[0] == "fake:echo" && getenv("MY_AGENT_ROUTES") == "" {
		return "Running on fake:echo: no OPENROUTER_API_KEY and no reachable Ollama, so replies only echo your message. Add a key to the env file and restart."
	}
	return ""
}
