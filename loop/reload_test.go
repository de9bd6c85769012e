package loop

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A Reloading crew loads again only when its stamp changes, tells Before
// of the new crew while the old one still answers, keeps the running crew
// when a reload fails and says why until one succeeds.
func TestReloadingCrewFollowsItsFiles(t *testing.T) {
	f := &files{stamp: "1"}
	c := &Reloading[int]{}
	c.Start(f, "master", slog.New(slog.DiscardHandler), &Loaded[int]{Agents: map[string]Agent{"zed": {ID: "zed"}, "master": {ID: "master"}}, Roster: "one", Problems: []string{"broken: x"}, With: 1})
	set := func(s string, l *Loaded[int], err error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.stamp, f.next, f.err = s, l, err
	}

	agents, problems := c.List()
	if len(agents) != 2 || agents[0].ID != "master" || !slices.Equal(problems, []string{"broken: x"}) {
		t.Fatalf("List = %v, %v", agents, problems)
	}
	c.ReloadIfChanged()
	if f.loads != 0 {
		t.Fatalf("loaded %d times with the stamp unchanged", f.loads)
	}

	var seen []string
	c.Before(func(l *Loaded[int]) {
		seen = append(seen, l.Roster)
		if c.Roster() == l.Roster {
			t.Error("Before was told after the new crew answered")
		}
	})
	set("2", &Loaded[int]{Agents: map[string]Agent{"master": {ID: "master"}}, Roster: "two", With: 2}, nil)
	c.ReloadIfChanged()
	if _, ok := c.Agent("zed"); ok || c.Roster() != "two" || c.Current().With != 2 || !slices.Equal(seen, []string{"two"}) {
		t.Fatalf("after a reload: zed there %v, roster %q, with %d, Before saw %v", ok, c.Roster(), c.Current().With, seen)
	}
	if p := c.Problems(); len(p) != 0 {
		t.Errorf("problems after a clean reload: %v", p)
	}

	set("3", nil, errors.New("config.yaml:1:1: bad"))
	c.ReloadIfChanged()
	p := c.Problems()
	if c.Roster() != "two" || len(p) != 1 || !strings.Contains(p[0], "not reloaded, the crew from before keeps running: config.yaml:1:1: bad") {
		t.Fatalf("after a failed reload: roster %q, problems %v", c.Roster(), p)
	}
	c.ReloadIfChanged() // same stamp: not tried again, still said
	if f.loads != 2 || len(c.Problems()) != 1 {
		t.Errorf("loads %d, problems %v", f.loads, c.Problems())
	}

	set("4", &Loaded[int]{Agents: map[string]Agent{"master": {ID: "master"}}, Roster: "four"}, nil)
	var wg sync.WaitGroup
	for range 4 { // reloads at once are one at a time: Before is told once
		wg.Go(func() { c.ReloadIfChanged(); c.Agent("master") })
	}
	wg.Wait()
	if c.Roster() != "four" || len(c.Problems()) != 0 || !slices.Equal(seen, []string{"two", "four"}) {
		t.Errorf("after the fix: roster %q, problems %v, Before saw %v", c.Roster(), c.Problems(), seen)
	}
}

// files are a Reloading crew's files as a test sets them.
type files struct {
	mu    sync.Mutex
	stamp string
	next  *Loaded[int]
	err   error
	loads int
}

func (f *files) Stamp() string { f.mu.Lock(); defer f.mu.Unlock(); return f.stamp }

func (f *files) Load() (*Loaded[int], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads++
	return f.next, f.err
}

// Watch reloads a crew whose files changed on its own; stop ends it and
// returns once it has, and so does a watch whose context ended.
func TestReloadingWatchFollowsUntilStop(t *testing.T) {
	f := &files{stamp: "1"}
	c := &Reloading[int]{}
	c.Start(f, "master", slog.New(slog.DiscardHandler), &Loaded[int]{Agents: map[string]Agent{"master": {ID: "master"}}, Roster: "one"})
	stop := c.Watch(t.Context(), 10*time.Millisecond)
	f.mu.Lock()
	f.stamp, f.next = "2", &Loaded[int]{Agents: map[string]Agent{"master": {ID: "master"}}, Roster: "two"}
	f.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for c.Roster() != "two" {
		if time.Now().After(deadline) {
			t.Fatal("the watch did not reload the changed crew within 10 s")
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
	stop()
	ctx, cancel := context.WithCancel(t.Context())
	stop = c.Watch(ctx, time.Hour)
	cancel()
	stop() // returns: the watch ended with its context
}
