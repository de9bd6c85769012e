package loop

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/loop/llm"
)

// Loaded is one load of a crew from its files: the agents that run, the
// roster every system prompt shows, what could not be loaded and why,
// the model catalog (config.yaml models: over the built-in defaults), and
// With, what the build that loaded it keeps beside (the App's: the home,
// its schedules and MCP servers). A reload replaces it whole.
type Loaded[T any] struct {
	Agents   map[string]Agent
	Roster   string
	Problems []string
	Catalog  *llm.Catalog
	With     T
}

// CrewFiles are what a Reloading crew is loaded from.
type CrewFiles[T any] interface {
	// Stamp fingerprints the files; a reload happens when it changes.
	Stamp() string
	// Load loads the crew anew from them; an error keeps the running
	// crew.
	Load() (*Loaded[T], error)
}

// Reloading is a crew that reloads itself when its files change, without
// a restart (R-HOME-4). Conversations already running keep going; each
// step asks for its agent afresh, so a reloaded crew answers from the
// next call on. A reload that fails (a config.yaml that no longer loads)
// keeps the running crew and says why among its Problems until one
// succeeds. The zero value may be handed out before Start (the team
// runtime looks teammates up in it); it is used from Start on.
type Reloading[T any] struct {
	files  CrewFiles[T]
	master string // listed first
	logger *slog.Logger

	reload sync.Mutex // one reload at a time: before sees them in order
	before func(*Loaded[T])

	mu      sync.RWMutex
	cur     *Loaded[T]
	stamp   string
	loadErr string // why the last reload failed, until one succeeds
}

// Start makes first, loaded from files as they are now, c's crew; master
// is the agent listed first (List).
func (c *Reloading[T]) Start(files CrewFiles[T], master string, logger *slog.Logger, first *Loaded[T]) {
	c.files, c.master, c.logger = files, master, logger
	c.mu.Lock()
	c.cur, c.stamp = first, files.Stamp()
	c.mu.Unlock()
	c.logProblems(first)
}

// Before has f told of every reloaded crew before anyone can see it
// (the scheduler and the redactor take it first: a job listed is a job
// the scheduler has, and a new secret is redacted before an agent of
// the new crew can write it).
func (c *Reloading[T]) Before(f func(*Loaded[T])) {
	c.reload.Lock()
	defer c.reload.Unlock()
	c.before = f
}

// Current is the crew as loaded now.
func (c *Reloading[T]) Current() *Loaded[T] {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cur
}

// Agent is agent id as the crew has it now.
func (c *Reloading[T]) Agent(id string) (Agent, bool) {
	a, ok := c.Current().Agents[id]
	return a, ok
}

// Roster is the current crew's roster.
func (c *Reloading[T]) Roster() string { return c.Current().Roster }

// Spec is what a route's model can do, from the current config.yaml.
func (c *Reloading[T]) Spec(route string) llm.ModelSpec { return c.Current().Catalog.Lookup(route) }

// List is the running crew in the order the pages show it (the master
// first), and what is not loaded.
func (c *Reloading[T]) List() ([]Agent, []string) {
	return InCrewOrder(c.Current().Agents, c.master), c.Problems()
}

// Problems are what is not loaded, and why the last reload failed.
func (c *Reloading[T]) Problems() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.loadErr == "" {
		return c.cur.Problems
	}
	return append([]string{c.loadErr}, c.cur.Problems...)
}

// ReloadIfChanged reloads the crew when the files it is made of changed
// since the last load.
func (c *Reloading[T]) ReloadIfChanged() {
	c.reload.Lock()
	defer c.reload.Unlock()
	stamp := c.files.Stamp()
	c.mu.RLock()
	same := stamp == c.stamp
	c.mu.RUnlock()
	if same {
		return
	}
	next, err := c.files.Load()
	if err != nil {
		c.logger.Error("crew not reloaded", "err", err)
		c.mu.Lock()
		c.stamp = stamp
		c.loadErr = fmt.Sprintf("not reloaded, the crew from before keeps running: %v", err)
		c.mu.Unlock()
		return
	}
	if c.before != nil {
		c.before(next)
	}
	c.mu.Lock()
	c.cur, c.stamp, c.loadErr = next, stamp, ""
	c.mu.Unlock()
	c.logger.Info("crew reloaded", "agents", strings.Join(slices.Sorted(maps.Keys(next.Agents)), ","), "problems", len(next.Problems))
	c.logProblems(next)
}

// Watch checks for changes every interval until ctx ends or stop; stop
// waits for a reload under way to end.
func (c *Reloading[T]) Watch(ctx context.Context, every time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				c.ReloadIfChanged()
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (c *Reloading[T]) logProblems(l *Loaded[T]) {
	for _, p := range l.Problems {
		c.logger.Error("agent skipped", "problem", p)
	}
}
