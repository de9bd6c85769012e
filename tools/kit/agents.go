package kit

import (
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// SubAgent is a sub-agent definition from .agents/agents/<file>.md (Claude
// Code's format): a role the agent can hand a task to, with its own prompt
// and, optionally, fewer tools or another model.
type SubAgent struct {
	Name        string // front matter name, else the file name without .md
	Description string // when to use it
	Path        string
	Prompt      string // the body: the sub-agent's system prompt
	// Tools are the tool names it may use. nil (no tools key) means it is not
	// restricted; an explicit empty list means none.
	Tools []string
	Model string // a route or model name; "" means the agent's own
}

type subAgentFront struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Tools       nameList `yaml:"tools"`
	Model       string   `yaml:"model"`
}

// SubAgents returns the sub-agent definitions of the home and of the agent's
// folder, sorted by name; the agent's definition replaces the home's of the
// same name. On error the definitions that loaded are still returned, and
// the error names every file that did not.
func SubAgents(homeDir, agentDir string) ([]SubAgent, error) {
	return loadAll(homeDir, agentDir, ".agents/agents", parseSubAgent, func(a SubAgent) string { return a.Name })
}

func parseSubAgent(path string, data []byte) (SubAgent, error) {
	var f subAgentFront
	body, err := parseFrontMatter(path, data, &f)
	if err != nil {
		return SubAgent{}, err
	}
	name := strings.TrimSpace(f.Name)
	if name == "" {
		name = baseName(path)
	}
	return SubAgent{
		Name: name, Description: oneLine(f.Description), Path: path, Prompt: body,
		Tools: f.Tools, Model: strings.TrimSpace(f.Model),
	}, nil
}

// nameList is a YAML list of names, or one comma-separated string of them
// ("Read, Grep, Glob" in Claude Code's files). Blank names are dropped.
type nameList []string

func (l *nameList) UnmarshalYAML(node ast.Node) error {
	var parts []string
	switch n := node.(type) {
	case *ast.NullNode:
		return nil
	case *ast.StringNode:
		parts = strings.Split(n.Value, ",")
	case *ast.SequenceNode:
		for _, v := range n.Values {
			s, ok := v.(*ast.StringNode)
			if !ok {
				return &yaml.SyntaxError{Message: "a tool name must be text", Token: v.GetToken()}
			}
			parts = append(parts, s.Value)
		}
	default:
		return &yaml.SyntaxError{Message: "tools must be a list of tool names or one comma-separated string of them", Token: node.GetToken()}
	}
	out := []string{}
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	*l = out
	return nil
}
