package web

import (
	"strings"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/ui"
)

// Crew is the running crew as the pages show it: an agent by id (its
// workspace holds the images a chat shows) and the loaded agents in the
// order they are shown, with what could not be loaded (the crew
// reloads).
type Crew interface {
	Agent(id string) (loop.Agent, bool)
	List() (agents []loop.Agent, problems []string)
}

// crewRows are the crew's agents as the sidebar lists them, and what
// could not be loaded.
func crewRows(crew Crew) ([]ui.AgentRow, []string) {
	agents, problems := crew.List()
	var rows []ui.AgentRow
	for _, a := range agents {
		rows = append(rows, ui.AgentRow{ID: a.ID, Name: a.Name, Description: a.Description, Routes: strings.Join(a.Routes, ", ")})
	}
	return rows, problems
}
