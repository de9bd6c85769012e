package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
// into s, once (events.MigrateFiles): a store already in s is newer and
// stays; a file not named <scope>.json is left. It returns how many
// stores it moved; one that is not JSON stops it, naming the file.
func (s *Store) MigrateFiles(ctx context.Context, dir string) (int, error) {
	n, err := events.MigrateFiles(dir, func(agent, file string, data []byte) error {
		scope, ok := strings.CutSuffix(file, ".json")
		if !ok {
			return events.ErrSkip
		}
		if !json.Valid(data) {
			return errors.New("not JSON (fix or delete it)")
		}
		return s.b.Create(ctx, storeKey(agent, scope), data, 0)
	})
	if err != nil {
		return n, fmt.Errorf("migrate script stores: %w", err)
	}
	return n, nil
}
