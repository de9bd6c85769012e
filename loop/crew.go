package loop

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/kit"
)

// Crew is the running crew as turns, the worker, the tools and the
// gateways look an agent up: the App's crew, which reloads from its files
// (a reloaded crew answers from the next call on), or a test's Agents. It
// is the one seam for "which agents are there, and how is each set up".
type Crew interface {
	// Agent is agent id as the crew has it now; false: no such agent.
	Agent(id string) (Agent, bool)
	// Roster is the crew, one line per agent, for the system prompt
	// (Roster); asked at every step.
	Roster() string
	// Spec is what a route's model can do (config.yaml models: over the
	// built-in defaults).
	Spec(route string) llm.ModelSpec
}

// Agents is a fixed crew: these agents by id, an empty roster and the
// built-in model specs.
type Agents map[string]Agent

// Agent is agent id.
func (c Agents) Agent(id string) (Agent, bool) { a, ok := c[id]; return a, ok }

// Roster is empty: a fixed crew's prompt names nobody.
func (Agents) Roster() string { return "" }

// Spec is the built-in spec of route.
func (Agents) Spec(route string) llm.ModelSpec { return (*llm.Catalog)(nil).Lookup(route) }

// ChannelApprovalTTL is the approval lifetime agent a sets for channel
// alone (telegram: approval_ttl_seconds, on a Telegram chat), or 0: its
// ApprovalTTL holds. A new conversation on channel keeps it.
func (a Agent) ChannelApprovalTTL(channel string) time.Duration {
	if strings.HasPrefix(channel, "telegram") {
		return a.TelegramApprovalTTL
	}
	return 0
}

// Running is a as the crew runs it: override, when set, for its routes;
// defaults for its tools when its agent.yaml lists none; then those its
// other keys give (grants, in order), each once, the tools of a grant's
// Family listed under tools: left out; and its id for a name it lacks.
func (a Agent) Running(override, defaults []string, grants ...tools.Grant) Agent {
	if override != nil {
		a.Routes = override
	}
	names := a.Tools
	if len(names) == 0 {
		names = defaults
	}
	a.Tools = slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		return slices.ContainsFunc(grants, func(g tools.Grant) bool { return g.Family != "" && strings.HasPrefix(n, g.Family) })
	})
	for _, g := range grants {
		for _, n := range g.Names {
			if !slices.Contains(a.Tools, n) {
				a.Tools = append(a.Tools, n)
			}
		}
	}
	a.Name = cmp.Or(a.Name, a.ID)
	return a
}

// Roster is the crew as every agent's system prompt shows it: one line per
// agent with the facts read from the running crew (R-CTX-1), its skills
// read from the kit of homeDir, and schedules naming an agent's enabled
// schedules (a kit sub-agent has none of its own).
func Roster(homeDir, master string, agents map[string]Agent, schedules func(id string) []string) string {
	ids := CrewOrder(agents, master)
	var b strings.Builder
	for _, id := range ids {
		a := agents[id]
		fmt.Fprintf(&b, "- %s (%s): %s", cmp.Or(a.Name, id), id, cmp.Or(a.Description, "no description"))
		if a.Persona != "" {
			b.WriteString(" (kit sub-agent)")
		}
		if len(a.Routes) > 0 {
			fmt.Fprintf(&b, " — model %s", a.Routes[0])
		}
		fmt.Fprintf(&b, "; tools: %s", strings.Join(a.Tools, ", "))
		if len(a.MCP) > 0 {
			fmt.Fprintf(&b, "; MCP servers: %s", strings.Join(a.MCP, ", "))
		}
		if skills, _ := kit.Skills(homeDir, a.Dir); len(skills) > 0 {
			names := make([]string, len(skills))
			for i, sk := range skills {
				names[i] = sk.Name
			}
			fmt.Fprintf(&b, "; skills: %s", strings.Join(names, ", "))
		}
		var names []string
		if a.Persona == "" {
			names = schedules(id)
		}
		if len(names) > 0 {
			fmt.Fprintf(&b, "; schedules: %s", strings.Join(names, ", "))
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// CrewOrder is the agents' ids as the crew is shown: the master first,
// then by id.
func CrewOrder(agents map[string]Agent, master string) []string {
	ids := make([]string, 0, len(agents))
	for id := range agents {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if (ids[i] == master) != (ids[j] == master) {
			return ids[i] == master
		}
		return ids[i] < ids[j]
	})
	return ids
}

// claudeTools maps Claude Code's tool names, as kit sub-agent files often
// list them, to ours.
var claudeTools = map[string]string{
	"Read": "workspace_read", "Grep": "workspace_grep", "Glob": "workspace_glob", "LS": "workspace_list",
	"Write": "workspace_write", "Edit": "workspace_edit", "MultiEdit": "workspace_edit", "Bash": "shell_run",
}

// InCrewOrder is the agents in CrewOrder.
func InCrewOrder(agents map[string]Agent, master string) []Agent {
	var out []Agent
	for _, id := range CrewOrder(agents, master) {
		out = append(out, agents[id])
	}
	return out
}

// AddKitAgents adds the kit's sub-agents (.agents/agents/*.md) to the crew,
// so agents can delegate to them: a home-level one under its name, with the
// master's settings; an agent's own as "<agent>-<name>", with that agent's.
// Each runs with its file's prompt as its whole persona (no memory of its
// own), the tools its file lists (all of its parent's but delegate when it
// lists none), and its file's model when that is a route (provider:model).
//
// homeDir is the crew's home; override says every agent's routes are
// overridden (a sub-agent's model then does not apply).
func AddKitAgents(homeDir, master string, agents map[string]Agent, override bool) (problems []string) {
	parents := CrewOrder(agents, master) // the master first: home-level ones take its settings
	homeKit := filepath.Join(homeDir, ".agents") + string(filepath.Separator)
	seen := map[string]bool{}
	for _, pid := range parents {
		parent := agents[pid]
		subs, err := kit.SubAgents(homeDir, parent.Dir)
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			problems = append(problems, err.Error())
		}
		for _, sa := range subs {
			id := sa.Name
			if !strings.HasPrefix(sa.Path, homeKit) {
				id = pid + "-" + sa.Name
			} else if pid != master && agents[master].ID != "" {
				continue // added with the master's settings
			}
			if seen["agent:"+id] {
				continue
			}
			seen["agent:"+id] = true
			if err := events.ValidID(id); err != nil {
				problems = append(problems, fmt.Sprintf("%s: kit sub-agent %q: %v", sa.Path, id, err))
				continue
			}
			if _, taken := agents[id]; taken {
				problems = append(problems, fmt.Sprintf("%s: kit sub-agent %q: an agent of that id exists", sa.Path, id))
				continue
			}
			a := parent
			a.ID, a.Name, a.Description, a.Persona, a.Delegates = id, sa.Name, sa.Description, sa.Prompt, nil
			a.Tools = nil
			if sa.Tools == nil {
				for _, t := range parent.Tools {
					if t != DelegateTool && t != "schedule_create" && t != "cancel_cron" {
						a.Tools = append(a.Tools, t)
					}
				}
			} else {
				for _, t := range sa.Tools {
					if ours, ok := claudeTools[t]; ok {
						t = ours
					}
					if !slices.Contains(a.Tools, t) {
						a.Tools = append(a.Tools, t)
					}
				}
			}
			// No memory of its own: the memory tools would write its parent's.
			a.Tools = slices.DeleteFunc(a.Tools, func(t string) bool { return t == "memory_save" || t == "memory_search" })
			if !override && sa.Model != "" {
				if _, err := llm.ParseRoute(sa.Model); err == nil {
					a.Routes = []string{sa.Model}
				}
			}
			agents[id] = a
		}
	}
	return problems
}

// Checks are doctor's lines on agents: each one CheckAgent refuses (serve
// skips it) and each kit file of an agent that does not load, by agent
// id in order.
func Checks(homeDir string, agents map[string]Agent, reg *tools.Registry) []string {
	var lines []string
	for _, id := range slices.Sorted(maps.Keys(agents)) {
		if err := CheckAgent(agents[id], reg); err != nil {
			lines = append(lines, fmt.Sprintf("agent %s will be skipped: %v", id, err))
		}
		for _, err := range kit.Check(homeDir, agents[id].Dir) {
			lines = append(lines, fmt.Sprintf("agent %s: %v", id, err))
		}
	}
	return lines
}

// SkipBroken leaves out of agents each one the loop cannot run
// (CheckAgent against reg, then servers: the MCP servers of its mcp: it
// keeps, or why it cannot have them) and says why, a line each; the
// others run, with the servers kept (R-HOME-3).
func SkipBroken(agents map[string]Agent, reg *tools.Registry, servers func(Agent) ([]string, error)) (problems []string) {
	for id, a := range agents {
		err := CheckAgent(a, reg)
		if err == nil {
			a.MCP, err = servers(a)
		}
		if err != nil {
			problems = append(problems, err.Error())
			delete(agents, id)
			continue
		}
		agents[id] = a
	}
	return problems
}

// CheckAgent refuses settings the loop cannot honour: unknown tool names,
// invalid shell patterns, unparsable routes.
func CheckAgent(a Agent, reg *tools.Registry) error {
	if len(a.Routes) == 0 {
		return fmt.Errorf("%s/agent.yaml: routes: none set (write provider:model routes, e.g. routes: [openrouter:openai/gpt-4.1-mini])", a.Dir)
	}
	for _, name := range a.Tools {
		if _, ok := reg.Lookup(name); !ok {
			return fmt.Errorf("%s/agent.yaml: tools: unknown tool %q", a.Dir, name)
		}
	}
	if err := tools.ValidatePolicy(a.Policy); err != nil {
		return fmt.Errorf("%s/agent.yaml: %w", a.Dir, err)
	}
	for _, r := range append(append([]string{}, a.Routes...), a.EscalationRoute) {
		if r == "" {
			continue
		}
		if _, err := llm.ParseRoute(r); err != nil {
			return fmt.Errorf("%s/agent.yaml: %w", a.Dir, err)
		}
	}
	return nil
}
