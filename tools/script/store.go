package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/nats-io/nats.go"
)

// Store keeps what scripts put with store.set, one JSON object per agent
// and scope (a scheduled job's, or a conversation's), in the log's
// cluster (events.ScriptBucket): a conversation another crew process
// takes over finds what its scripts kept (issue 30 item 4).
type Store struct{ b *events.Bucket }

// NewStore keeps the stores in b.
func NewStore(b *events.Bucket) *Store { return &Store{b: b} }

// OpenStore opens the stores' bucket on nc and moves in, once, the files
// an older build kept in the home (MigrateFiles); logger is told of a
// raise of the bucket's replicas and of what moved. sync runs after each
// write (events.OpenBucket).
func OpenStore(ctx context.Context, nc *nats.Conn, home string, sync func() error, logger *slog.Logger) (*Store, error) {
	b, err := events.OpenBucket(ctx, nc, events.ScriptBucket, "tool_script stores", sync)
	if err != nil {
		return nil, err
	}
	b.Raised().Tell(logger)
	s := NewStore(b)
	n, err := s.MigrateFiles(ctx, FilesDir(home))
	if n > 0 {
		logger.Info("moved the scripts' stores from files into the log's bucket", "stores", n, "from", FilesDir(home))
	}
	return s, err
}

func storeKey(agent, scope string) string { return agent + "." + scope }

// Load is the store of agent's scope; empty when none was saved.
func (s *Store) Load(ctx context.Context, agent, scope string) (map[string]json.RawMessage, error) {
	b, err := s.b.Get(ctx, storeKey(agent, scope))
	if errors.Is(err, events.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("script store: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("script store %s: %w", storeKey(agent, scope), err)
	}
	return m, nil
}

// Save replaces the store of agent's scope with m.
func (s *Store) Save(ctx context.Context, agent, scope string, m map[string]json.RawMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("script store: %w", err)
	}
	if err := s.b.Put(ctx, storeKey(agent, scope), b, 0); err != nil {
		return fmt.Errorf("script store: %w", err)
	}
	return nil
}

// FilesDir is where a home kept its scripts' stores before they moved to
// the cluster: <dir>/<agent>/<scope>.json.
func FilesDir(home string) string { return filepath.Join(home, "data", "script_store") }

// MigrateFiles moves the stores a home kept in files under dir (FilesDir)
// into s, once: a store already in s is newer and stays; each file is
// removed once its store is in s, then the folder. It returns how many
// stores it moved; a file it cannot read or place stops it, naming the
// file, and is left where it is.
func (s *Store) MigrateFiles(ctx context.Context, dir string) (moved int, err error) {
	agents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("migrate script stores: %w", err)
	}
	for _, a := range agents {
		if !a.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, a.Name()))
		if err != nil {
			return moved, fmt.Errorf("migrate script stores: %w", err)
		}
		for _, f := range files {
			scope, ok := strings.CutSuffix(f.Name(), ".json")
			path := filepath.Join(dir, a.Name(), f.Name())
			if !ok || f.IsDir() {
				if strings.HasSuffix(f.Name(), ".json.tmp") {
					os.Remove(path) // a write cut by a crash, never renamed into place
				}
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return moved, fmt.Errorf("migrate script store %s: %w", path, err)
			}
			if !json.Valid(b) {
				return moved, fmt.Errorf("migrate script store %s: not JSON (fix or delete it)", path)
			}
			err = s.b.Create(ctx, storeKey(a.Name(), scope), b, 0)
			if err != nil && !errors.Is(err, events.ErrExists) {
				return moved, fmt.Errorf("migrate script store %s: %w", path, err)
			}
			if err == nil {
				moved++
			}
			if err := os.Remove(path); err != nil {
				return moved, fmt.Errorf("migrate script store %s: %w", path, err)
			}
		}
		os.Remove(filepath.Join(dir, a.Name())) // empty now, unless something else is in it
	}
	os.Remove(dir)
	return moved, nil
}
