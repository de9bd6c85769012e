package kit

import "fmt"

// Check loads every kit file of an agent (skills, kit commands,
// sub-agents, hooks) and returns what does not load, each error saying
// what it costs: the server runs without a broken skill, command or
// sub-agent, and a broken hooks.json blocks every tool call until fixed.
func Check(homeDir, agentDir string) []error {
	var errs []error
	if _, err := Skills(homeDir, agentDir); err != nil {
		errs = append(errs, fmt.Errorf("skills not loaded: %w", err))
	}
	if _, err := Commands(homeDir, agentDir); err != nil {
		errs = append(errs, fmt.Errorf("kit commands not loaded: %w", err))
	}
	if _, err := SubAgents(homeDir, agentDir); err != nil {
		errs = append(errs, fmt.Errorf("kit sub-agents not loaded: %w", err))
	}
	if _, err := LoadHooks(nil, homeDir, agentDir); err != nil {
		errs = append(errs, fmt.Errorf("hooks not loaded, so its tool calls are blocked: %w", err))
	}
	return errs
}
