package home

import "strings"

// EnabledSchedules names the enabled schedules of agent id, for the
// roster.
func (h *Home) EnabledSchedules(id string) []string {
	var names []string
	if cfg := h.Agents[id]; cfg != nil {
		for _, sc := range cfg.Schedules {
			if sc.On() {
				names = append(names, sc.Name)
			}
		}
	}
	return names
}

// envSettings are the <home>/env variables that hold addresses and routes,
// not secrets: redacting them would hide which model or host answered.
// One that carries credentials (user:password@host) is a secret again.
var envSettings = map[string]bool{"OLLAMA_HOST": true, "OPENROUTER_BASE_URL": true, "MY_AGENT_ROUTES": true}

// EnvSecrets is the env file less its plain settings: what the redactor
// must never let out (the home's redactor, LoadSecrets).
func (h *Home) EnvSecrets() map[string]string {
	out := make(map[string]string, len(h.Env))
	for k, v := range h.Env {
		if !envSettings[k] || strings.Contains(v, "@") {
			out[k] = v
		}
	}
	return out
}
