package scheduler

import (
	"iter"
	"slices"
	"strings"
)

// Schedule is one entry of schedules: in agent.yaml, in the scheduler's
// own config type (cmd/crew/home decodes and checks it where it is
// written). Exactly one of Prompt, Command, Script and Consolidate is
// set; ThenPrompt only goes with Script.
type Schedule struct {
	Name               string `yaml:"name"`
	Cron               string `yaml:"cron"`
	Prompt             string `yaml:"prompt"`
	Command            string `yaml:"command"`
	Script             string `yaml:"script"`
	Consolidate        bool   `yaml:"consolidate"` // rewrite MEMORY.md from the week's notes as a proposal (R-MEM-2)
	ThenPrompt         string `yaml:"then_prompt"`
	ApprovalTTLSeconds int    `yaml:"approval_ttl_seconds"` // 0: inherit from the agent
	// Enabled false keeps the schedule written down without running it
	// (the examples crew init installs ship that way). nil: enabled.
	Enabled *bool `yaml:"enabled"`
}

// On reports whether the schedule runs.
func (s Schedule) On() bool { return s.Enabled == nil || *s.Enabled }

// Profile is the jobs of the schedules of agents (schedulesOf each), in
// order of id: the enabled ones (on), the profile Config.Jobs and
// SetProfile take, or those written down with enabled: false (listed,
// not run).
func Profile(agents iter.Seq[string], schedulesOf func(agent string) []Schedule, on bool) []Job {
	var jobs []Job
	for id := range agents {
		for _, sc := range schedulesOf(id) {
			if sc.On() != on {
				continue
			}
			jobs = append(jobs, Job{
				ID: ProfileJobID(id, sc.Name), Agent: id, Name: sc.Name, Cron: sc.Cron, Prompt: sc.Prompt, Command: sc.Command,
				Script: sc.Script, ThenPrompt: sc.ThenPrompt, ApprovalTTLSeconds: sc.ApprovalTTLSeconds, Consolidate: sc.Consolidate,
			})
		}
	}
	slices.SortFunc(jobs, func(a, b Job) int { return strings.Compare(a.ID, b.ID) })
	return jobs
}
