package web

import (
	"strings"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/ui"
)

// CrewRows is Pages.Crew for a running crew: crew gives the loaded agents
// in the order they are shown and what could not be loaded.
func CrewRows(crew func() (agents []loop.Agent, problems []string)) func() ([]ui.AgentRow, []string) {
	return func() ([]ui.AgentRow, []string) {
		agents, problems := crew()
		var rows []ui.AgentRow
		for _, a := range agents {
			rows = append(rows, ui.AgentRow{ID: a.ID, Name: a.Name, Description: a.Description, Routes: strings.Join(a.Routes, ", ")})
		}
		return rows, problems
	}
}
