package scheduler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// sweep deletes spill files older than SpillMaxAge. A failure is logged
// and the schedule goes on.
func (s *Scheduler) sweep() {
	n, err := sweepDir(s.cfg.SpillDir, s.cfg.Clock.Now().Add(-s.cfg.SpillMaxAge))
	if err != nil {
		s.cfg.Logger.Error("spill sweep failed", "dir", s.cfg.SpillDir, "deleted", n, "err", err)
		return
	}
	if n > 0 {
		s.cfg.Logger.Info("spill sweep", "dir", s.cfg.SpillDir, "deleted", n)
	}
}

// sweepDir deletes regular files under dir modified before cutoff. It goes
// on past errors and returns them joined. A missing dir is not an error.
func sweepDir(dir string, cutoff time.Time) (int, error) {
	n := 0
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			errs = append(errs, err)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if info.ModTime().Before(cutoff) {
			if err := os.Remove(path); err != nil {
				errs = append(errs, err)
				return nil
			}
			n++
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return n, fmt.Errorf("sweep %s: %w", dir, errors.Join(errs...))
	}
	return n, nil
}
