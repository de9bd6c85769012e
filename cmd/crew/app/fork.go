package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/projections"
	"github.com/nats-io/nuid"
	"go.etcd.io/bbolt"
)

// forker makes forks (R-X-2) on the store of the process that holds it:
// crew serve for POST /api/runs/{id}/fork and the runs page, crew replay
// --from-step on a stopped home. It reads the original and writes only the
// new conversation, through its one writer.
type forker struct {
	log   *events.Log
	db    *bbolt.DB
	convs *loop.Convs
	dir   string // the home: spill/ is copied
	// callable says whether this home can call route (a key for it, a
	// script file that loads).
	callable func(route llm.Route) error
	kick     func(conversation string)
	// waitFor waits until the projections have applied a sequence, so a
	// run stored a moment ago is found.
	fresh projections.Freshness
}

var _ web.Forker = forker{}

// Forker makes forks on a's store.
func (a *App) Forker() web.Forker {
	return forker{log: a.Log(), db: a.DB(), convs: a.Convs, dir: a.Dir, callable: a.callable, kick: a.Worker.Kick, fresh: a.Runner}
}

// Fork copies run at step into a new conversation on route and has the
// worker continue it.
func (f forker) Fork(ctx context.Context, runID string, step int, route string) (web.Forked, error) {
	if err := events.ValidID(runID); err != nil {
		return web.Forked{}, fmt.Errorf("run %q: %w: %v", runID, loop.ErrForkRun, err)
	}
	r, err := llm.ParseRoute(route)
	if err != nil {
		return web.Forked{}, fmt.Errorf("%w %q: %v", loop.ErrForkRoute, route, err)
	}
	if err := f.callable(r); err != nil {
		return web.Forked{}, fmt.Errorf("%w %q: %v", loop.ErrForkRoute, route, err)
	}
	if err := projections.ReadYourWrites(ctx, f.log, f.fresh); err != nil {
		return web.Forked{}, err
	}
	run, err := projections.GetRun(f.db, runID)
	if errors.Is(err, projections.ErrNotFound) {
		return web.Forked{}, fmt.Errorf("run %s: %w", runID, loop.ErrForkRun)
	}
	if err != nil {
		return web.Forked{}, err
	}
	envs, err := f.log.ReadAll(ctx, events.Conv(run.Conversation).Filter(), 0)
	if err != nil {
		return web.Forked{}, err
	}
	title := run.Conversation
	if c, err := projections.GetConversation(f.db, run.Conversation); err == nil && c.Title != "" {
		title = c.Title
	}
	spec := loop.ForkSpec{Conversation: "fork-" + nuid.Next(), RunID: nuid.Next(), Route: r.String(),
		Title: fmt.Sprintf("Fork of %s at step %d on %s", title, step, r.String())}
	evs, err := loop.ForkEvents(envs, runID, step, spec)
	if err != nil {
		return web.Forked{}, err
	}
	// tool_output_read finds a result by call id in the conversation's
	// spill folder: the fork gets a copy of the original's.
	if err := copySpill(filepath.Join(f.dir, "spill"), run.Conversation, spec.Conversation); err != nil {
		return web.Forked{}, fmt.Errorf("fork: copy the spilled results: %w", err)
	}
	c, err := f.convs.Get(ctx, spec.Conversation)
	if err != nil {
		return web.Forked{}, err
	}
	if _, err := c.Append(ctx, func(st *loop.State) ([]events.Event, error) {
		if st.Seq != 0 {
			return nil, fmt.Errorf("fork: conversation %s exists already", spec.Conversation)
		}
		return evs, nil
	}); errors.Is(err, events.ErrTooLarge) {
		return web.Forked{}, fmt.Errorf("%w: the history to step %d is too large to copy into one event (%v)", loop.ErrForkRefused, step, err)
	} else if err != nil {
		return web.Forked{}, err
	}
	f.kick(spec.Conversation)
	return web.Forked{Conversation: spec.Conversation, RunID: spec.RunID, Route: spec.Route,
		From: events.ForkOrigin{Conversation: run.Conversation, RunID: runID, Step: step}}, nil
}

// copySpill copies spill/<from>/ to spill/<to>/ (nothing when there is none).
func copySpill(spill, from, to string) error {
	src, err := os.OpenRoot(filepath.Join(spill, from))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer src.Close()
	dst := filepath.Join(spill, to)
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	return fs.WalkDir(src.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == "." {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, path), 0o700)
		}
		if !d.Type().IsRegular() {
			return nil // only files the harness wrote
		}
		data, err := src.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, path), data, 0o600)
	})
}
