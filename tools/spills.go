package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/nats-io/nats.go"
)

// Spills keep what Spill and SpillImage save — the whole output of a cut
// call, the images a result carried — by conversation and file name.
// crew serve keeps them in the log's object store (ObjectSpills), so a
// conversation another crew process takes over or forks reads them
// (issue 30 item 4); SpillDir keeps them in files.
type Spills interface {
	Put(ctx context.Context, conv, name string, data []byte) error
	// Get is what Put stored; an error matching fs.ErrNotExist when
	// nothing was (or it was swept).
	Get(ctx context.Context, conv, name string) ([]byte, error)
	// Copy copies every file of conversation from to conversation to
	// (a fork's); none is no error.
	Copy(ctx context.Context, from, to string) error
}

// SpillMaxAge is how long crew serve keeps a spill after its write.
const SpillMaxAge = 7 * 24 * time.Hour

// spillWait bounds a spill's write: it is made whatever the call's
// context (the tool_completed event stored next names it), so a stop
// that cancels the turn does not leave a cut output unkept.
const spillWait = 30 * time.Second

// SpillDir is Spills in files: <dir>/<conversation>/<name>, written
// atomically, mode 600.
type SpillDir string

var _ Spills = SpillDir("")

func (d SpillDir) Put(_ context.Context, conv, name string, data []byte) error {
	dir := filepath.Join(string(d), conv)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return WriteAtomic(nil, root, name, data, 0o600)
}

func (d SpillDir) Get(_ context.Context, conv, name string) ([]byte, error) {
	root, err := os.OpenRoot(filepath.Join(string(d), conv))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.ReadFile(name)
}

func (d SpillDir) Copy(_ context.Context, from, to string) error {
	src, err := os.OpenRoot(filepath.Join(string(d), from))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer src.Close()
	dst := filepath.Join(string(d), to)
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	return fs.WalkDir(src.FS(), ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == "." {
			return err
		}
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(dst, path), 0o700)
		}
		if !e.Type().IsRegular() {
			return nil // only files the harness wrote
		}
		data, err := src.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, path), data, 0o600)
	})
}

// ObjectSpills are Spills in the log's object store (events.SpillBucket),
// object <conversation>/<name>, each kept for the store's TTL after its
// write.
type ObjectSpills struct{ o *events.Objects }

var _ Spills = (*ObjectSpills)(nil)

// OpenSpills opens the spills' object store on nc, each kept maxAge after
// its write and made durable by sync before its Put returns (nil: the
// server's own sync; events.OpenObjects), and moves in, once, the files an
// older build kept under <home>/spill (MigrateFiles: a file goes once its
// object is durable); logger is told of a raise of the store's replicas
// and of what moved.
func OpenSpills(ctx context.Context, nc *nats.Conn, home string, maxAge time.Duration, sync func() error, logger *slog.Logger) (*ObjectSpills, error) {
	o, err := events.OpenObjects(ctx, nc, events.SpillBucket, "cut tool outputs and result images", maxAge, sync)
	if err != nil {
		return nil, err
	}
	o.Raised().Tell(logger)
	s := &ObjectSpills{o: o}
	dir := filepath.Join(home, "spill")
	n, err := s.MigrateFiles(ctx, dir)
	if n > 0 {
		logger.Info("moved the spilled tool outputs from files into the log's object store", "files", n, "from", dir)
	}
	return s, err
}

func objectName(conv, name string) string { return conv + "/" + name }

func (s *ObjectSpills) Put(ctx context.Context, conv, name string, data []byte) error {
	return s.o.Put(ctx, objectName(conv, name), data)
}

func (s *ObjectSpills) Get(ctx context.Context, conv, name string) ([]byte, error) {
	b, err := s.o.Get(ctx, objectName(conv, name))
	if errors.Is(err, events.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return b, err
}

func (s *ObjectSpills) Copy(ctx context.Context, from, to string) error {
	names, err := s.o.Names(ctx, from+"/")
	if err != nil {
		return err
	}
	for _, n := range names {
		b, err := s.o.Get(ctx, n)
		if errors.Is(err, events.ErrNotFound) {
			continue // swept meanwhile
		}
		if err != nil {
			return err
		}
		if err := s.o.Put(ctx, objectName(to, strings.TrimPrefix(n, from+"/")), b); err != nil {
			return err
		}
	}
	return nil
}

// MigrateFiles moves the spills a home kept in files under dir
// (<conversation>/<name>) into s, once (events.MigrateFiles): one already
// in s stays. It returns how many files it moved.
func (s *ObjectSpills) MigrateFiles(ctx context.Context, dir string) (int, error) {
	n, err := events.MigrateFiles(dir, func(conv, file string, data []byte) error {
		name := objectName(conv, file)
		has, err := s.o.Has(ctx, name)
		if err != nil {
			return err
		}
		if has {
			return events.ErrExists
		}
		return s.o.Put(ctx, name, data)
	})
	if err != nil {
		return n, fmt.Errorf("migrate spills: %w", err)
	}
	return n, nil
}
