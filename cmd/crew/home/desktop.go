package home

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ComputerReport says which agents have the computer tools, with which
// apps, and which of them can reach the display around the tools' rules.
func (h *Home) ComputerReport() []string {
	var lines []string
	for _, id := range slices.Sorted(maps.Keys(h.Agents)) {
		a := h.Agents[id]
		if !a.ComputerOn() {
			continue
		}
		apps := strings.Join(a.Policy.ComputerApps, ", ")
		if apps == "" {
			apps = "none (computer_act refuses everything)"
		}
		lines = append(lines, fmt.Sprintf("  agent %s: computer on, computer_apps %s", id, apps))
		if shellReachesDisplay(a) {
			lines = append(lines, fmt.Sprintf("  agent %s: its shell_run commands can reach the X display and the session bus around the computer tools' rules; set shell_network: false", id))
		}
	}
	return lines
}

// BrowserUsers are the agents with the browser key, "id (mode)", sorted.
func (h *Home) BrowserUsers() []string {
	var users []string
	for _, id := range slices.Sorted(maps.Keys(h.Agents)) {
		if m := h.Agents[id].Policy.Browser; m != "" {
			users = append(users, id+" ("+m+")")
		}
	}
	return users
}

// shellReachesDisplay: the agent may run shell commands that are not
// barred from Unix sockets (only shell_network: false bars them).
func shellReachesDisplay(a *Agent) bool {
	hasShell := len(a.Tools) == 0 || slices.Contains(a.Tools, "shell_run")
	return hasShell && (a.Policy.ShellNetwork == nil || *a.Policy.ShellNetwork)
}
