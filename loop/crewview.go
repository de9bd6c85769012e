package loop

import "github.com/my-agent-crew/crew/events/view"

// Listed is a crew that also lists its agents in the order the pages
// show them, with what could not be loaded.
type Listed interface {
	Agent(id string) (Agent, bool)
	List() (agents []Agent, problems []string)
}

// CrewView is a crew as the web pages read it (web.Crew): its agents as
// view.Agent, so gateways/web imports no loop type.
type CrewView struct{ Crew Listed }

// Agent is agent id as view.Agent.
func (c CrewView) Agent(id string) (view.Agent, bool) {
	a, ok := c.Crew.Agent(id)
	return a.View(), ok
}

// List is the crew's agents as view.Agent, and what is not loaded.
func (c CrewView) List() ([]view.Agent, []string) {
	agents, problems := c.Crew.List()
	out := make([]view.Agent, len(agents))
	for i, a := range agents {
		out[i] = a.View()
	}
	return out, problems
}

// View is a as the web pages use it.
func (a Agent) View() view.Agent {
	return view.Agent{ID: a.ID, Name: a.Name, Description: a.Description, Routes: a.Routes, MCP: a.MCP, Workspace: a.Workspace}
}
