package web

import (
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/tools/mcp"
	"github.com/my-agent-crew/crew/ui"
)

// Crew is the running crew as the pages show it: an agent by id (its
// workspace holds the images a chat shows) and the loaded agents in the
// order they are shown, with what could not be loaded (the crew
// reloads).
type Crew interface {
	Agents
	List() (agents []view.Agent, problems []string)
}

// Agents gives an agent by id as the crew has it now; false: no such
// agent.
type Agents interface {
	Agent(id string) (view.Agent, bool)
}

// crewRows are the crew's agents as the sidebar lists them, and what
// could not be loaded; states are the MCP servers' states as the crew has
// them (nil: none shown), so each agent's row names its servers and what
// keeps one from being used ("needs login: run crew mcp login <name>").
func crewRows(crew Crew, states func() []mcp.State) ([]ui.AgentRow, []string) {
	agents, problems := crew.List()
	byName := map[string]mcp.State{}
	if states != nil && slices.ContainsFunc(agents, func(a view.Agent) bool { return len(a.MCP) > 0 }) {
		for _, st := range states() {
			byName[st.Name] = st
		}
	}
	var rows []ui.AgentRow
	for _, a := range agents {
		row := ui.AgentRow{ID: a.ID, Name: a.Name, Description: a.Description, Routes: strings.Join(a.Routes, ", ")}
		for _, name := range a.MCP {
			st, ok := byName[name]
			if !ok {
				continue
			}
			line := ui.MCPLine{Name: name, State: st.State}
			if st.State == "needs login" || st.State == "down" {
				line.Note = st.Error
			}
			row.MCP = append(row.MCP, line)
		}
		rows = append(rows, row)
	}
	return rows, problems
}
