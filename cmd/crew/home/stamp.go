package home

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Stamp fingerprints what a crew is loaded from: config.yaml, env,
// every agent.yaml, the skills and kit commands the roster lists and the
// kit sub-agents (name, size and modification time). Persona and memory
// files are not in it: they are read afresh at every step anyway.
func Stamp(dir string) string {
	var b strings.Builder
	patterns := []string{
		"config.yaml", "env", "agent.yaml", "agents", "agents/*", "agents/*/agent.yaml",
		"skills/*.md", "agents/*/skills/*.md", ".agents/commands/*.md", "agents/*/.agents/commands/*.md",
		// Kit sub-agents join the crew (loop.AddKitAgents) with their prompt
		// read at load, so an edit must reload it.
		".agents/agents/*.md", "agents/*/.agents/agents/*.md",
	}
	for _, p := range patterns {
		matches, _ := filepath.Glob(filepath.Join(dir, p))
		sort.Strings(matches)
		for _, m := range matches {
			fi, err := os.Stat(m)
			if err != nil {
				continue
			}
			fmt.Fprintf(&b, "%s %d %d\n", m, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}
