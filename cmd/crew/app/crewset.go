package app

import (
	"context"
	"maps"
	"slices"
	"sort"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/scheduler"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/mcp"
)

// crewSet is what the home's crew keeps beside its agents (loop.Loaded):
// the home it was loaded from, its schedules and its MCP servers.
type crewSet struct {
	home     *home.Home
	profile  []scheduler.Job // the enabled schedules of the loaded agents
	disabled []scheduler.Job // and those written down with enabled: false
	mcp      []mcp.Server    // config.yaml mcp_servers that can be used
}

// crewFiles are the home at dir as a crew is loaded from it: override,
// when set, replaces every agent's routes; reg are the server's tools,
// getenv and secrets resolve the MCP servers' values.
type crewFiles struct {
	dir      string
	override []string
	reg      *tools.Registry
	getenv   func(string) string
	secrets  *events.Redactor
}

// Stamp fingerprints the home's crew files (home.Stamp).
func (f crewFiles) Stamp() string { return home.Stamp(f.dir) }

// Load loads the home anew and builds its crew.
func (f crewFiles) Load() (*loop.Loaded[crewSet], error) {
	h, err := home.Load(f.dir)
	if err != nil {
		return nil, err
	}
	return f.build(h), nil
}

// build checks every agent of h against the tools the server has; a
// broken one is reported and left out, the others run (R-HOME-3).
func (f crewFiles) build(h *home.Home) *loop.Loaded[crewSet] {
	agents := loopAgents(h, f.override, f.reg.Defaults())
	var problems []string
	for _, p := range h.Problems {
		problems = append(problems, p.Error())
	}
	servers, mcpProblems := MCPServers(h, f.secrets, f.getenv)
	problems = append(problems, mcpProblems...)
	problems = append(problems, loop.AddKitAgents(h.Dir, home.MasterID, agents, f.override != nil)...)
	problems = append(problems, loop.SkipBroken(agents, f.reg, func(a loop.Agent) ([]string, error) {
		return mcp.Usable(a.Dir, a.MCP, h.Config.MCPServers, servers)
	})...)
	sort.Strings(problems)
	return &loop.Loaded[crewSet]{Agents: agents, Roster: loop.Roster(h.Dir, home.MasterID, agents, h.EnabledSchedules), Problems: problems,
		Catalog: h.Config.Catalog(), With: crewSet{home: h, mcp: servers,
			profile: scheduler.Profile(maps.Keys(agents), h.Schedules, true), disabled: scheduler.Profile(maps.Keys(agents), h.Schedules, false)}}
}

// Crew is the home's crew, reloaded from its files when they change
// (loop.Reloading of crewFiles), with the schedules its agents declare.
type Crew struct{ loop.Reloading[crewSet] }

// Profile are the enabled schedules of the loaded agents.
func (c *Crew) Profile() []scheduler.Job { return c.Current().With.profile }

// Disabled are the schedules written down with enabled: false.
func (c *Crew) Disabled() []scheduler.Job { return c.Current().With.disabled }

// SetScheduleEnabled writes enabled: on back into the agent.yaml of the
// profile job id (comments kept) and reloads the crew, so the scheduler
// runs or stops it at once. A chat job is not in any agent.yaml.
func (c *Crew) SetScheduleEnabled(ctx context.Context, id string, on bool) error {
	cur := c.Current().With
	for _, j := range append(slices.Clone(cur.profile), cur.disabled...) {
		if j.ID != id {
			continue
		}
		a := cur.home.Agents[j.Agent]
		if a == nil {
			return scheduler.ErrUnknownJob
		}
		if err := home.SetScheduleEnabled(a.Dir, j.Name, on); err != nil {
			return err
		}
		c.ReloadIfChanged()
		return nil
	}
	return scheduler.ErrUnknownJob
}
