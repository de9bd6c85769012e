package consolidate

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
)

// instruction is the system prompt of the rewrite.
//
//go:embed instruction.md
var instruction string

// Days is how many days of notes a consolidation reads: today and the six
// before, in the owner's timezone.
const Days = 7

// Triggers: what asked for a consolidation.
const (
	TriggerCLI = view.TriggerCLI
	TriggerAPI = view.TriggerAPI
	TriggerJob = view.TriggerJob
)

// Agent is what consolidation needs of an agent.
type Agent struct {
	ID         string
	Dir        string   // holds MEMORY.md and memory/YYYY-MM-DD.md
	Routes     []string // tried in order
	Autonomous bool
}

// AgentOf is what consolidation needs of a loop agent.
func AgentOf(a loop.Agent) Agent {
	return Agent{ID: a.ID, Dir: a.Dir, Routes: a.Routes, Autonomous: a.Autonomous}
}

// agent is what consolidation needs of agent id.
func (s *Service) agent(id string) (Agent, bool) {
	a, ok := s.cfg.Crew.Agent(id)
	return AgentOf(a), ok
}

// Config wires a Service.
type Config struct {
	Log    *events.Log
	Crew   loop.Crew // the agents whose memory is consolidated
	Models llm.Models
	// Clock is the time, the owner's zone (nil: UTC) and the proposals'
	// ids; nil: the wall clock in UTC.
	Clock  loop.Clock
	Logger *slog.Logger
}

// Service files, decides and rolls back MEMORY.md proposals.
type Service struct {
	cfg Config
	loc *time.Location // the owner's zone
	// mu orders every check of MEMORY.md with the append and the write
	// that follow it (see the package doc).
	mu sync.Mutex
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = loop.WallClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, loc: cmp.Or(cfg.Clock.Location(), time.UTC)}
}

// Get returns a proposal with its diff, or ErrUnknownProposal.
func (s *Service) Get(ctx context.Context, id string) (Proposal, error) {
	p, _, err := s.current(ctx, id)
	if err != nil {
		return Proposal{}, err
	}
	return withDiff(p), nil
}

// List returns the proposals of agent (all when ""), newest first, with
// their counts of lines but without the texts and the diff.
func (s *Service) List(ctx context.Context, agent string) ([]Proposal, error) {
	filter := events.Root + ".agent.>"
	if agent != "" {
		filter = events.Agent(agent).Filter()
	}
	f, err := s.fold(ctx, filter)
	if err != nil {
		return nil, err
	}
	out := make([]Proposal, 0, len(f.order))
	for _, id := range slices.Backward(f.order) {
		if p := f.byID[id]; agent == "" || p.Agent == agent {
			v := withDiff(*p)
			v.Old, v.New, v.Diff = "", "", nil
			out = append(out, v)
		}
	}
	return out, nil
}

// Consolidate asks the agent's model to rewrite MEMORY.md from the notes
// of the last 7 days and files the rewrite as a proposal, applied at once
// only when the agent is autonomous and Classify says add_only or
// date_only. With no notes it calls no model and returns
// ErrNothingToConsolidate. trigger is TriggerCLI, TriggerAPI or TriggerJob.
func (s *Service) Consolidate(ctx context.Context, agentID, trigger string) (Proposal, error) {
	switch trigger {
	case TriggerCLI, TriggerAPI, TriggerJob:
	default:
		return Proposal{}, fmt.Errorf("consolidate %s: trigger %q: want cli, api or job", agentID, trigger)
	}
	a, ok := s.agent(agentID)
	if !ok {
		return Proposal{}, fmt.Errorf("%w: %q is not a loaded agent", ErrUnknownAgent, agentID)
	}
	old, err := readMemory(a.Dir)
	if err != nil {
		return Proposal{}, fmt.Errorf("consolidate %s: %w", a.ID, err)
	}
	days, notes, err := s.notes(a.Dir)
	if err != nil {
		return Proposal{}, fmt.Errorf("consolidate %s: %w", a.ID, err)
	}
	if len(days) == 0 {
		from, to := s.window()
		return Proposal{}, fmt.Errorf("%w: %s wrote no notes in memory/ from %s to %s", ErrNothingToConsolidate, a.ID, from, to)
	}
	answer, err := s.rewrite(ctx, a, old, notes)
	text, route, cost := answer.Text, answer.Route, answer.CostUSD
	if err != nil {
		return Proposal{}, fmt.Errorf("consolidate %s: %w", a.ID, err)
	}
	kind, reason := Classify(old, text, notes)
	id := s.cfg.Clock.NewID()

	s.mu.Lock()
	defer s.mu.Unlock()
	auto := a.Autonomous && AutoApplies(kind)
	switch {
	case !AutoApplies(kind):
		reason += "; only add-only and date-only proposals are applied without a human"
	case !a.Autonomous:
		reason += "; " + a.ID + " is not autonomous, so a human decides"
	}
	if auto {
		// The model took a while: if MEMORY.md changed meanwhile, writing
		// the rewrite would lose that change.
		if now, err := readMemory(a.Dir); err != nil {
			return Proposal{}, fmt.Errorf("consolidate %s: %w", a.ID, err)
		} else if now != old {
			auto = false
			reason += "; MEMORY.md changed while the model was writing, so it waits"
		}
	}
	proposed := &events.MemoryProposed{ProposalID: id, Agent: a.ID, Old: old, New: text, Days: days, Kind: kind, Reason: reason,
		Route: route, CostUSD: cost, Trigger: trigger}
	evs := []events.Event{loop.HarnessCall(events.PurposeConsolidate, answer), proposed}
	if auto {
		evs = append(evs, &events.MemoryProposalDecided{ProposalID: id, Decision: events.ProposalAutoApplied, Channel: trigger})
	}
	last, err := s.appendRetry(ctx, a.ID, evs...)
	if err != nil {
		return Proposal{}, fmt.Errorf("consolidate %s: file proposal %s: %w", a.ID, id, err)
	}
	if auto {
		if err := writeMemory(s.cfg.Log.Redactor(), a.Dir, text); err != nil {
			return Proposal{}, fmt.Errorf("consolidate %s: proposal %s is recorded as auto-applied, but %w", a.ID, id, err)
		}
	}
	s.cfg.Logger.Info("memory proposal filed", "agent", a.ID, "proposal", id, "kind", kind, "applied", auto, "route", route)
	return s.after(ctx, a.ID, last, id)
}

// ProposePersona files a tool's write to an agent's AGENTS.md or SOUL.md
// as a proposal that always waits for the owner (R-X-7): from c.Old, the
// file as the tool read it, to c.New. Nothing is written; Decide applies
// it only while the file is still c.Old.
func (s *Service) ProposePersona(ctx context.Context, c tools.PersonaChange) (string, error) {
	if c.File != events.PersonaAgents && c.File != events.PersonaSoul {
		return "", fmt.Errorf("propose %q: only %s and %s are proposed this way", c.File, events.PersonaAgents, events.PersonaSoul)
	}
	if _, ok := s.agent(c.Agent); !ok {
		return "", fmt.Errorf("%w: %q is not a loaded agent", ErrUnknownAgent, c.Agent)
	}
	kind, _ := Classify(c.Old, c.New, "")
	id := s.cfg.Clock.NewID()
	proposed := &events.MemoryProposed{ProposalID: id, Agent: c.Agent, Old: c.Old, New: c.New, Days: []string{}, Kind: kind,
		Reason:  c.File + " is the owner's: a tool's change to it is applied only when the owner approves",
		Trigger: events.TriggerTool, File: c.File, Tool: c.Tool, Run: c.RunID, CallID: c.CallID, Conversation: c.Conversation, Untrusted: c.Untrusted}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.appendRetry(ctx, c.Agent, proposed); err != nil {
		return "", fmt.Errorf("propose %s of %s: %w", c.File, c.Agent, err)
	}
	s.cfg.Logger.Info("persona proposal filed", "agent", c.Agent, "proposal", id, "file", c.File, "tool", c.Tool, "run", c.RunID)
	return id, nil
}

// Job is a consolidate job's run (schedules: consolidate: true): its
// output says what was filed; no notes is a quiet success.
func (s *Service) Job(ctx context.Context, agent string) (string, error) {
	p, err := s.Consolidate(ctx, agent, TriggerJob)
	if errors.Is(err, ErrNothingToConsolidate) {
		return err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	outcome := "waits for a human at /memory"
	if p.Status == StatusApplied {
		outcome = "applied to MEMORY.md"
	}
	return fmt.Sprintf("proposal %s: %s, %s", p.ID, p.Kind, outcome), nil
}

// window is the first and last day of notes read, YYYY-MM-DD.
func (s *Service) window() (from, to string) {
	today := s.cfg.Clock.Now().In(s.loc)
	return today.AddDate(0, 0, -(Days - 1)).Format(time.DateOnly), today.Format(time.DateOnly)
}

// notes reads memory/YYYY-MM-DD.md of the last Days days, oldest first,
// as the model is shown them; days lists the files that had text.
func (s *Service) notes(dir string) (days []string, text string, err error) {
	today := s.cfg.Clock.Now().In(s.loc)
	y, m, d := today.Date()
	var b strings.Builder
	for i := Days - 1; i >= 0; i-- {
		day := time.Date(y, m, d-i, 12, 0, 0, 0, s.loc).Format(time.DateOnly)
		name := "memory/" + day + ".md"
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("read %s: %w", name, err)
		}
		note := strings.TrimSpace(strings.ReplaceAll(string(data), "\r\n", "\n"))
		if note == "" {
			continue
		}
		days = append(days, day)
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", name, note)
	}
	return days, b.String(), nil
}

// rewrite asks the agent's routes in order for the new MEMORY.md; a route
// that fails or answers nothing passes to the next.
func (s *Service) rewrite(ctx context.Context, a Agent, old, notes string) (llm.Answer, error) {
	current := strings.TrimSpace(old)
	if current == "" {
		current = "(MEMORY.md is empty)"
	}
	from, to := s.window()
	user := fmt.Sprintf("Today is %s (%s).\n\n# Current MEMORY.md\n\n%s\n\n# Notes from %s to %s\n\n%s# Task\n\nWrite the new MEMORY.md.",
		to, s.loc, current, from, to, notes)
	req := llm.Request{Purpose: events.PurposeConsolidate, Payer: llm.Payer{Agent: a.ID},
		Messages: []llm.Message{llm.Text(llm.RoleSystem, instruction), llm.Text(llm.RoleUser, user)}}
	answer, err := llm.Ask(ctx, s.cfg.Models, a.Routes, req, func(r string, err error) {
		s.cfg.Logger.Warn("memory consolidation: route failed", "agent", a.ID, "route", r, "err", err)
	})
	if ctx.Err() != nil {
		return llm.Answer{}, ctx.Err()
	}
	if err != nil {
		return llm.Answer{}, fmt.Errorf("%w: %w", ErrModel, err)
	}
	answer.Text = cleanReply(answer.Text)
	return answer, nil
}

// cleanReply is the file the model wrote: without a code fence around
// all of it, ending with one newline.
func cleanReply(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
	if strings.HasPrefix(s, "```") && strings.HasSuffix(s, "```") {
		if i := strings.IndexByte(s, '\n'); i >= 0 && len(s) >= i+4 {
			s = strings.TrimSpace(s[i+1 : len(s)-3])
		}
	}
	return s + "\n"
}

// Decide approves or rejects a pending proposal. An approval is stored,
// then MEMORY.md is written. It refuses with ErrAlreadyDecided a proposal
// decided before, and an approval with ErrMemoryChanged when MEMORY.md is
// no longer the text the proposal was made from. channel says where the
// decision came from (web, api, …).
func (s *Service) Decide(ctx context.Context, id string, approve bool, channel string) (Proposal, error) {
	if err := events.ValidID(id); err != nil {
		return Proposal{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	decision := events.ProposalRejected
	if approve {
		decision = events.ProposalApproved
	}
	p, seq, err := s.settle(ctx, id, "decide", func(p Proposal) (events.Event, func() error, error) {
		if p.Status != StatusPending {
			return nil, nil, fmt.Errorf("%w: proposal %s of %s was %s", ErrAlreadyDecided, id, p.Agent, decided(p, s.loc))
		}
		ev := &events.MemoryProposalDecided{ProposalID: id, Decision: decision, Channel: channel}
		if !approve {
			return ev, nil, nil
		}
		name := p.FileName()
		a, ok := s.agent(p.Agent)
		if !ok {
			return nil, nil, fmt.Errorf("%w: %q is not loaded, so its %s cannot be written", ErrUnknownAgent, p.Agent, name)
		}
		now, err := readFile(a.Dir, name)
		if err != nil {
			return nil, nil, fmt.Errorf("approve proposal %s: %w", id, err)
		}
		if now != p.Old {
			again := "consolidate " + p.Agent + " again"
			if p.File != "" {
				again = "edit " + name + " yourself, or have the agent propose again"
			}
			return nil, nil, fmt.Errorf("%w: %s changed since proposal %s was made: approving it would lose that change; reject it and %s", ErrMemoryChanged, name, id, again)
		}
		return ev, func() error {
			if err := writeFile(s.cfg.Log.Redactor(), a.Dir, name, p.New); err != nil {
				return fmt.Errorf("proposal %s is recorded as approved, but %w", id, err)
			}
			return nil
		}, nil
	})
	if err != nil {
		return Proposal{}, err
	}
	s.cfg.Logger.Info("memory proposal decided", "agent", p.Agent, "proposal", id, "decision", decision, "channel", channel)
	return s.after(ctx, p.Agent, seq, id)
}

// settle stores the event plan makes of the proposal's current state, read
// again when someone appended to the agent's scope meanwhile, then runs
// the file write plan returned: stored first, then written.
func (s *Service) settle(ctx context.Context, id, what string, plan func(Proposal) (events.Event, func() error, error)) (Proposal, uint64, error) {
	for attempt := 1; ; attempt++ {
		p, expect, err := s.current(ctx, id)
		if err != nil {
			return Proposal{}, 0, err
		}
		ev, write, err := plan(p)
		if err != nil {
			// A refusal made on a state someone has since moved on (a
			// decision stored, its file written) is judged again on the
			// new state, as a conflicting append would be.
			if _, now, cerr := s.current(ctx, id); cerr == nil && now != expect && attempt < maxAttempts {
				continue
			}
			return Proposal{}, 0, err
		}
		seq, err := s.append(ctx, p.Agent, expect, ev)
		if errors.Is(err, events.ErrConflict) && attempt < maxAttempts {
			continue // someone appended to the agent's scope: read again
		}
		if err != nil {
			return Proposal{}, 0, fmt.Errorf("%s proposal %s: %w", what, id, err)
		}
		if write != nil {
			if err := write(); err != nil {
				return Proposal{}, 0, err
			}
		}
		return p, seq, nil
	}
}

// Rollback puts back the MEMORY.md an applied proposal replaced: stored,
// then written. It refuses with ErrNotApplied a proposal that is not
// applied, and with ErrMemoryChanged when MEMORY.md is no longer what the
// proposal wrote.
func (s *Service) Rollback(ctx context.Context, id, channel string) (Proposal, error) {
	if err := events.ValidID(id); err != nil {
		return Proposal{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, seq, err := s.settle(ctx, id, "roll back", func(p Proposal) (events.Event, func() error, error) {
		if p.Status != StatusApplied {
			return nil, nil, fmt.Errorf("%w: proposal %s of %s is %s; only an applied proposal can be rolled back", ErrNotApplied, id, p.Agent, strings.ReplaceAll(p.Status, "_", " "))
		}
		name := p.FileName()
		a, ok := s.agent(p.Agent)
		if !ok {
			return nil, nil, fmt.Errorf("%w: %q is not loaded, so its %s cannot be written", ErrUnknownAgent, p.Agent, name)
		}
		now, err := readFile(a.Dir, name)
		if err != nil {
			return nil, nil, fmt.Errorf("roll back proposal %s: %w", id, err)
		}
		if now != p.New {
			return nil, nil, fmt.Errorf("%w: %s changed since proposal %s was applied: rolling it back would lose that change", ErrMemoryChanged, name, id)
		}
		return &events.MemoryRolledBack{ProposalID: id, Channel: channel}, func() error {
			if err := writeFile(s.cfg.Log.Redactor(), a.Dir, name, p.Old); err != nil {
				return fmt.Errorf("proposal %s is recorded as rolled back, but %w", id, err)
			}
			return nil
		}, nil
	})
	if err != nil {
		return Proposal{}, err
	}
	s.cfg.Logger.Info("memory proposal rolled back", "agent", p.Agent, "proposal", id, "channel", channel)
	return s.after(ctx, p.Agent, seq, id)
}

// decided says how and when p was decided: "approved at 2026-11-30 18:02".
func decided(p Proposal, loc *time.Location) string {
	d := strings.ReplaceAll(p.Decision, "_", "-") // approved, rejected, auto-applied
	if p.Decided != nil {
		d += " at " + p.Decided.In(loc).Format("2006-01-02 15:04")
	}
	if p.Status == StatusRolledBack {
		d += " and rolled back since"
	}
	return d
}

// current returns the proposal folded from its agent's scope, and the
// scope's last sequence: the expectation of the next append.
func (s *Service) current(ctx context.Context, id string) (Proposal, uint64, error) {
	agent, err := s.agentOf(ctx, id)
	if err != nil {
		return Proposal{}, 0, err
	}
	f, err := s.fold(ctx, events.Agent(agent).Filter())
	if err != nil {
		return Proposal{}, 0, err
	}
	p, ok := f.byID[id]
	if !ok {
		return Proposal{}, 0, fmt.Errorf("%w: no proposal %q", ErrUnknownProposal, id)
	}
	return *p, f.last, nil
}

// agentOf finds the agent whose scope holds proposal id.
func (s *Service) agentOf(ctx context.Context, id string) (string, error) {
	for env, err := range s.cfg.Log.Read(ctx, events.Root+".agent.*."+events.TypeMemoryProposed, 1) {
		if err != nil {
			return "", err
		}
		e, err := env.Decode()
		if err != nil {
			return "", err
		}
		if p, ok := e.(*events.MemoryProposed); ok && p.ProposalID == id {
			return events.ScopeOf(env.Subject).ID(), nil
		}
	}
	return "", fmt.Errorf("%w: no proposal %q", ErrUnknownProposal, id)
}

// maxAttempts bounds the re-reads after a conflicting append: each
// conflict means another writer made progress.
const maxAttempts = 10

// append stores one event on the agent's scope, expecting expect as its
// last sequence; it returns the event's sequence.
func (s *Service) append(ctx context.Context, agent string, expect uint64, e events.Event) (uint64, error) {
	env, err := events.New(e)
	if err != nil {
		return 0, err
	}
	stored, err := s.cfg.Log.Append(ctx, events.Agent(agent), expect, env)
	if err != nil {
		return 0, err
	}
	return stored[0].Seq, nil
}

// appendRetry stores new events on the agent's scope after whatever is
// there (a new proposal depends on no earlier event of the scope).
func (s *Service) appendRetry(ctx context.Context, agent string, evs ...events.Event) (uint64, error) {
	for attempt := 1; ; attempt++ {
		expect, err := s.cfg.Log.Last(ctx, events.Agent(agent).Filter())
		if err != nil {
			return 0, err
		}
		envs := make([]events.Envelope, len(evs))
		for i, e := range evs {
			if envs[i], err = events.New(e); err != nil {
				return 0, err
			}
		}
		stored, err := s.cfg.Log.Append(ctx, events.Agent(agent), expect, envs...)
		if errors.Is(err, events.ErrConflict) && len(stored) == 0 && attempt < maxAttempts {
			continue
		}
		if err != nil {
			return 0, err
		}
		return stored[len(stored)-1].Seq, nil
	}
}

// after returns the proposal of agent's scope once seq is stored.
func (s *Service) after(ctx context.Context, agent string, seq uint64, id string) (Proposal, error) {
	f, err := s.fold(ctx, events.Agent(agent).Filter())
	if err != nil {
		return Proposal{}, err
	}
	p, ok := f.byID[id]
	if !ok || f.last < seq {
		return Proposal{}, fmt.Errorf("proposal %s: stored at %d, but the log reads %s only to %d", id, seq, agent, f.last)
	}
	return withDiff(*p), nil
}
