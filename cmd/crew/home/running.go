package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nats-io/nuid"
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

// NodeID is this home's name among the homes sharing one NATS cluster
// (data/node-id, made once): its durable consumers are named after it, so
// a restart of the home finds its own again and two homes never share
// one.
func NodeID(dir string) (string, error) {
	path := filepath.Join(dir, "data", "node-id")
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if validNodeID(id) {
			return id, nil
		}
		return "", fmt.Errorf("%s: %q is not a node id (letters and digits, 1 to 32); delete the file to get a new one", path, id)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	id := strings.ToLower(nuid.Next()[:12])
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return id, nil
}

func validNodeID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
