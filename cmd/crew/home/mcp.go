package home

import (
	"maps"
	"slices"
)

// MCPNames are the servers of config.yaml mcp_servers, sorted.
func (h *Home) MCPNames() []string { return slices.Sorted(maps.Keys(h.Config.MCPServers)) }
