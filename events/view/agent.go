package view

// Agent is a loaded agent as the web pages use it: the sidebar's row (id,
// name, description, routes, MCP servers) and the workspace that holds
// the files a chat or a canvas shows (from loop.Agent).
type Agent struct {
	ID, Name, Description string
	Routes                []string
	MCP                   []string // the MCP servers whose tools it may find
	Workspace             string
}
