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
