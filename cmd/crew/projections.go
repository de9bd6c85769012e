package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/search"
)

// searchProjection names the search index for `crew projections rebuild`.
const searchProjection = "search"

func runProjections(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "projections")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.Arg(0) != "rebuild" || fs.NArg() > 2 {
		fs.Usage()
		return exitError{2}
	}
	// The search index is a projection too, kept in bleve rather than
	// bbolt (projections/search).
	withSearch := fs.Arg(1) == "" || fs.Arg(1) == searchProjection
	var chosen []projections.Projection
	if fs.Arg(1) != searchProjection {
		var err error
		if chosen, err = projections.Named(fs.Arg(1)); err != nil {
			return fmt.Errorf("%w, %s", err, searchProjection)
		}
	}
	dir, h, err := openHome(env, *homeFlag)
	if err != nil {
		return err
	}
	a, err := app.Open(ctx, dir, h, app.Options{StoreOnly: true, Secrets: env.redactor()})
	if errors.Is(err, home.ErrStoreBusy) {
		return fmt.Errorf("%w: stop the server, then rebuild", err)
	}
	if err != nil {
		return err
	}
	defer a.Close()
	for _, p := range chosen {
		start := time.Now()
		if err := projections.Rebuild(ctx, a.Log(), a.DB(), p); err != nil {
			return fmt.Errorf("rebuild %s: %w", p.Name(), err)
		}
		cp, _ := projections.Checkpoint(a.DB(), p.Name())
		fmt.Fprintf(env.stdout, "rebuilt %s up to sequence %d in %s\n", p.Name(), cp, time.Since(start).Round(time.Millisecond))
	}
	if withSearch {
		start := time.Now()
		last, err := search.Rebuild(ctx, search.IndexDir(dir), a.Log(), a.Log().Redactor())
		if err != nil {
			return fmt.Errorf("rebuild %s: %w", searchProjection, err)
		}
		fmt.Fprintf(env.stdout, "rebuilt %s up to sequence %d in %s\n", searchProjection, last, time.Since(start).Round(time.Millisecond))
	}
	return nil
}
