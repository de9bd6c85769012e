package home

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrStoreBusy means another crew process (a running server) holds the
// home's store.
var ErrStoreBusy = errors.New("the event store is in use by a running crew serve")

// DataLock is the home's flock on data/crew.lock.
type DataLock struct {
	f   *os.File
	dir string
}

// Close releases the lock and removes data/serve.json: what a server
// holding it wrote of itself is not true after.
func (l *DataLock) Close() error {
	os.Remove(filepath.Join(l.dir, "serve.json"))
	return l.f.Close()
}

// LockData makes the home's data folder and takes its flock
// (data/crew.lock), so one process at a time opens the store: ErrStoreBusy
// when another holds it.
func LockData(homeDir string) (*DataLock, error) {
	dir := filepath.Join(homeDir, "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "crew.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrStoreBusy
		}
		return nil, fmt.Errorf("open store: lock: %w", err)
	}
	return &DataLock{f: lock, dir: dir}, nil
}
