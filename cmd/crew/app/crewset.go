package app

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/scheduler"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/mcp"
)

// crewSet is the loaded crew: the agents that run, the roster every system
// prompt shows, and what could not be loaded. A reload replaces it whole.
type crewSet struct {
	home     *home.Home
	agents   map[string]loop.Agent
	roster   string
	problems []string
	profile  []scheduler.Job // the enabled schedules of the loaded agents
	disabled []scheduler.Job // and those written down with enabled: false
	catalog  *llm.Catalog    // config.yaml models: over the built-in defaults
	mcp      []mcp.Server    // config.yaml mcp_servers that can be used
}

// buildCrew checks every loaded agent against the tools the server has; a
// broken one is reported and left out, the others run (R-HOME-3).
func buildCrew(h *home.Home, override []string, reg *tools.Registry, getenv func(string) string, secrets *events.Redactor) *crewSet {
	agents := loopAgents(h, override, reg.Defaults())
	var problems []string
	for _, p := range h.Problems {
		problems = append(problems, p.Error())
	}
	servers, mcpProblems := MCPServers(h, secrets, getenv)
	problems = append(problems, mcpProblems...)
	problems = append(problems, loop.AddKitAgents(h.Dir, home.MasterID, agents, override != nil)...)
	for id, a := range agents {
		if err := loop.CheckAgent(a, reg); err != nil {
			problems = append(problems, err.Error())
			delete(agents, id)
			continue
		}
		var err error
		if a.MCP, err = mcp.Usable(a.Dir, a.MCP, h.Config.MCPServers, servers); err != nil {
			problems = append(problems, err.Error())
			delete(agents, id)
			continue
		}
		agents[id] = a
	}
	sort.Strings(problems)
	return &crewSet{home: h, agents: agents, roster: loop.Roster(h.Dir, home.MasterID, agents, h.EnabledSchedules), problems: problems, profile: profileJobs(h, agents, true), disabled: profileJobs(h, agents, false), catalog: h.Config.Catalog(), mcp: servers}
}

// Crew holds the current crewSet and reloads it when an agent's files
// change, without a restart (R-HOME-4). Conversations already running keep
// going; each step asks for the agent afresh.
type Crew struct {
	dir      string
	getenv   func(string) string
	secrets  *events.Redactor // the home's: MCP values resolved are added
	override []string
	reg      *tools.Registry
	logger   *slog.Logger
	onReload func(*crewSet)

	mu      sync.RWMutex
	cur     *crewSet
	stamp   string
	loadErr string // why the last reload failed, until one succeeds
}

// list is the running crew in the order the UI shows it, and what is not
// loaded.
func (c *Crew) List() ([]loop.Agent, []string) {
	return loop.InCrewOrder(c.get().agents, home.MasterID), c.Problems()
}

// problems are what is not loaded, and why the last reload failed.
func (c *Crew) Problems() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.loadErr == "" {
		return c.cur.problems
	}
	return append([]string{c.loadErr}, c.cur.problems...)
}

func newCrew(dir string, h *home.Home, override []string, reg *tools.Registry, getenv func(string) string, secrets *events.Redactor, logger *slog.Logger) *Crew {
	c := &Crew{}
	c.load(dir, h, override, reg, getenv, secrets, logger)
	return c
}

// load builds c, given before it is loaded to what the registry's tools
// need of it (the team runtime looks teammates up in it).
func (c *Crew) load(dir string, h *home.Home, override []string, reg *tools.Registry, getenv func(string) string, secrets *events.Redactor, logger *slog.Logger) {
	c.dir, c.getenv, c.secrets, c.override, c.reg, c.logger = dir, getenv, secrets, override, reg, logger
	c.cur = buildCrew(h, override, reg, getenv, secrets)
	c.stamp = home.Stamp(dir)
	for _, p := range c.cur.problems {
		logger.Error("agent skipped", "problem", p)
	}
}

func (c *Crew) get() *crewSet {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cur
}

func (c *Crew) Agent(id string) (loop.Agent, bool) {
	a, ok := c.get().agents[id]
	return a, ok
}

func (c *Crew) Roster() string { return c.get().roster }

// spec is what a route's model can do, from the current config.yaml.
func (c *Crew) Spec(route string) llm.ModelSpec { return c.get().catalog.Lookup(route) }

func (c *Crew) Profile() []scheduler.Job { return c.get().profile }

// Disabled are the schedules written down with enabled: false.
func (c *Crew) Disabled() []scheduler.Job { return c.get().disabled }

// SetScheduleEnabled writes enabled: on back into the agent.yaml of the
// profile job id (comments kept) and reloads the crew, so the scheduler
// runs or stops it at once. A chat job is not in any agent.yaml.
func (c *Crew) SetScheduleEnabled(ctx context.Context, id string, on bool) error {
	cur := c.get()
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
		c.reloadIfChanged()
		return nil
	}
	return scheduler.ErrUnknownJob
}

// reloadIfChanged reloads the crew when the files it is made of changed
// since the last load. A home whose config.yaml or env no longer loads
// keeps the running crew and reports why.
func (c *Crew) reloadIfChanged() {
	stamp := home.Stamp(c.dir)
	c.mu.RLock()
	same := stamp == c.stamp
	c.mu.RUnlock()
	if same {
		return
	}
	h, err := home.Load(c.dir)
	if err != nil {
		c.logger.Error("crew not reloaded", "err", err)
		c.mu.Lock()
		c.stamp = stamp
		c.loadErr = fmt.Sprintf("not reloaded, the crew from before keeps running: %v", err)
		c.mu.Unlock()
		return
	}
	next := buildCrew(h, c.override, c.reg, c.getenv, c.secrets)
	// The scheduler and the redactor take the new crew before anyone can
	// see it: a job listed is a job the scheduler has, and a new secret is
	// redacted before an agent of the new crew can write it.
	if c.onReload != nil {
		c.onReload(next)
	}
	c.mu.Lock()
	c.cur, c.stamp, c.loadErr = next, stamp, ""
	c.mu.Unlock()
	c.logger.Info("crew reloaded", "agents", strings.Join(slices.Sorted(maps.Keys(next.agents)), ","), "problems", len(next.problems))
	for _, p := range next.problems {
		c.logger.Error("agent skipped", "problem", p)
	}
}

// watch checks for changes every interval until ctx ends.
func (c *Crew) watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.reloadIfChanged()
		}
	}
}
