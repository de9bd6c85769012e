package home

import (
	"maps"
	"path/filepath"
	"slices"
)

// MCPNames are the servers of config.yaml mcp_servers, sorted.
func (h *Home) MCPNames() []string { return slices.Sorted(maps.Keys(h.Config.MCPServers)) }

// MCPTokenFile is where crew mcp login keeps the grant of the remote
// server name: the home's secret area, mode 0600 in a 0700 folder.
func (h *Home) MCPTokenFile(name string) string {
	return filepath.Join(h.Dir, "secrets", "mcp", name+".json")
}
