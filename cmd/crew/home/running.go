package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// runningMarker is <home>/data/running: there while a server runs, removed
// when it stops cleanly. Found at start, it says the last server died (a
// crash, kill -9, power loss), so runs it left open were cut by a crash
// (R-X-4: cut twice, a run is closed as interrupted).
func runningMarker(dir string) string { return filepath.Join(dir, "data", "running") }

// MarkRunning writes the marker and reports whether the previous server
// stopped cleanly (no marker was there).
func MarkRunning(dir string) (clean bool, err error) {
	path := runningMarker(dir)
	_, err = os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		clean = true
	case err != nil:
		return false, fmt.Errorf("check %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return clean, nil
}

// ClearRunning removes the marker after a clean stop.
func ClearRunning(dir string) { os.Remove(runningMarker(dir)) }
