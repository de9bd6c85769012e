package events

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// storeSync makes the embedded store's CREW stream durable for the log
// with sync "always" (ADR 0008): the server writes each message to its
// message block as it stores it (no fsync: the server runs with its
// periodic sync), and a Log.Append that must be durable waits for one
// fsync of the blocks written since the last one. One fsync serves every
// append acknowledged before it began, so the events of one decision —
// the deferred ones before it (Deferred) and those of other conversations
// appending at the same moment — cost one fsync together, where the
// server's own SyncAlways costs one per message.
type storeSync struct {
	dir string // <store>/jetstream/$G/streams/CREW

	mu      sync.Mutex
	cond    *sync.Cond
	started uint64 // fsync rounds begun
	done    uint64 // the last round finished
	running bool
	err     error // the last finished round's

	// Touched only by the one running round.
	block int      // index of the last message block synced (0: none yet)
	f     *os.File // that block, open
	dirs  bool     // the directories holding it are synced

	rounds atomic.Uint64 // fsync rounds made, for tests
}

func newStoreSync(storeDir string) *storeSync { return newStreamSync(storeDir, StreamName) }

// newStreamSync is a storeSync of stream's message blocks (a bucket's or
// an object store's beside the log: Server.StreamSync).
func newStreamSync(storeDir, stream string) *storeSync {
	s := &storeSync{dir: filepath.Join(storeDir, "jetstream", "$G", "streams", stream)}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Sync returns once every message stored before it was called is on disk.
func (s *storeSync) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A round already running may have begun before the caller's message
	// was written: the caller needs the next one.
	want := s.started + 1
	for s.done < want {
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		s.started++
		n := s.started
		s.mu.Unlock()
		err := s.fsync()
		s.mu.Lock()
		s.running = false
		s.done = n
		if s.err == nil {
			// The first failure stays: after a failed fsync the kernel may
			// have dropped the dirty pages, and a later fsync that succeeds
			// says nothing of them. Every append after it fails until the
			// process restarts (and recovery reads what the disk holds).
			s.err = err
		}
		s.cond.Broadcast()
	}
	return s.err
}

// fsync syncs the last block synced and every block the server started
// after it (a block rolled over between two rounds holds unsynced
// messages at its end), and the directories once a block is new.
func (s *storeSync) fsync() error {
	s.rounds.Add(1)
	msgs := filepath.Join(s.dir, "msgs")
	if s.f != nil && replaced(s.f) {
		// The server rewrote the block (a compaction writes a new file
		// and renames it over the old name): what it writes next goes to
		// the new file, which an fsync of the old one would miss.
		s.f.Close()
		s.f, s.dirs = nil, false
	}
	if s.f == nil {
		last, err := lastBlock(msgs)
		if err != nil {
			return err
		}
		if last == 0 {
			// Every round follows a stored append: a stream whose blocks
			// are not where the server keeps them would go unsynced.
			return fmt.Errorf("sync the event store: no message block in %s", msgs)
		}
		if s.f, err = os.Open(blockPath(msgs, last)); err != nil {
			return fmt.Errorf("sync the event store: %w", err)
		}
		s.block = last
	}
	for {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("sync the event store: %s: %w", s.f.Name(), err)
		}
		next, err := os.Open(blockPath(msgs, s.block+1))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return fmt.Errorf("sync the event store: %w", err)
		}
		s.f.Close()
		s.f, s.block, s.dirs = next, s.block+1, false
	}
	if !s.dirs {
		// A new block's name, and at the first round the stream's own
		// files and directories, reach the disk too.
		for _, p := range []string{msgs, filepath.Join(s.dir, "meta.inf"), filepath.Join(s.dir, "meta.sum"), s.dir,
			filepath.Dir(s.dir), filepath.Dir(filepath.Dir(s.dir)), filepath.Dir(filepath.Dir(filepath.Dir(s.dir)))} {
			if err := syncPath(p); err != nil {
				return fmt.Errorf("sync the event store: %w", err)
			}
		}
		s.dirs = true
	}
	return nil
}

func (s *storeSync) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.running {
		s.cond.Wait()
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// replaced says whether f's name now names another file (or none).
func replaced(f *os.File) bool {
	held, err := f.Stat()
	if err != nil {
		return true
	}
	now, err := os.Stat(f.Name())
	return err != nil || !os.SameFile(held, now)
}

func blockPath(msgs string, i int) string { return filepath.Join(msgs, strconv.Itoa(i)+".blk") }

// lastBlock is the highest index of msgs' message blocks, 0 when none.
func lastBlock(msgs string) (int, error) {
	entries, err := os.ReadDir(msgs)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sync the event store: %w", err)
	}
	last := 0
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".blk")); err == nil && strings.HasSuffix(e.Name(), ".blk") {
			last = max(last, n)
		}
	}
	return last, nil
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// deferredKey marks a context whose appends wait for the next durable one.
type deferredKey struct{}

// Deferred returns ctx marked so that Log.Append with it returns as soon
// as the events are stored, before they are fsynced: the next append
// without the mark (or Log.Sync) makes them durable together with its
// own. A process crash loses nothing either way (the server has written
// them); a power cut before that next fsync loses the deferred events
// after the last durable one, so only an event whose loss recovery
// answers honestly is deferred — a model's reply (its reservation stays
// open and is settled at the worst case), a tool's result (the call is
// closed as interrupted), a settlement (the reservation stands).
func Deferred(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferredKey{}, true)
}

// IsDeferred says whether ctx is marked by Deferred.
func IsDeferred(ctx context.Context) bool { v, _ := ctx.Value(deferredKey{}).(bool); return v }

// Sync makes every event this log stored so far durable (with sync
// "always" on the embedded server; otherwise the store's own setting
// decides and Sync does nothing).
func (l *Log) Sync(ctx context.Context) error {
	if l == nil || l.fsync == nil {
		return nil
	}
	return l.fsync.Sync()
}

// Fsyncs is how many fsyncs the log has made (Server.OpenLog with sync
// "always"; 0 otherwise): a benchmark reports them per step.
func (l *Log) Fsyncs() uint64 {
	if l == nil || l.fsync == nil {
		return 0
	}
	return l.fsync.rounds.Load()
}
