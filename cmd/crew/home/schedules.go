package home

import (
	"strings"

	"github.com/my-agent-crew/crew/gateways/scheduler"
)

// Schedules are agent id's schedules: in agent.yaml (none for an agent
// the home does not hold, such as a kit sub-agent).
func (h *Home) Schedules(id string) []scheduler.Schedule {
	if a := h.Agents[id]; a != nil {
		return a.Schedules
	}
	return nil
}

// EnabledSchedules names the enabled schedules of agent id, for the
// roster.
func (h *Home) EnabledSchedules(id string) []string {
	var names []string
	for _, sc := range h.Schedules(id) {
		if sc.On() {
			names = append(names, sc.Name)
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
