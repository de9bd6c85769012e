package events

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrSkip, from a MigrateFiles place, leaves a file where it is: it is
// not one the store keeps.
var ErrSkip = errors.New("events: not a file to migrate")

// MigrateFiles moves, once, the files an older build kept in two levels of
// folders under dir (<sub>/<name>) into a store beside the log: place
// stores one file's data, and answers ErrExists when the store already
// holds a newer one (kept) or ErrSkip for a file it does not keep (left).
// Each file is removed once it is in the store, then each emptied folder
// and dir; a write a crash cut (a name starting with "." or ending in
// ".tmp") is removed unread. It returns how many files place stored; the
// first file that cannot be read, placed or removed stops it with an
// error naming the file, which stays, as does every file not yet stored.
// A missing dir moves nothing.
func MigrateFiles(dir string, place func(sub, name string, data []byte) error) (moved int, err error) {
	subs, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, sub := range subs {
		if !sub.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, sub.Name()))
		if err != nil {
			return moved, err
		}
		for _, f := range files {
			path := filepath.Join(dir, sub.Name(), f.Name())
			if !f.Type().IsRegular() {
				continue
			}
			if strings.HasPrefix(f.Name(), ".") || strings.HasSuffix(f.Name(), ".tmp") {
				os.Remove(path) // never renamed into place
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return moved, err
			}
			switch err := place(sub.Name(), f.Name(), b); {
			case errors.Is(err, ErrSkip):
				continue
			case errors.Is(err, ErrExists):
			case err != nil:
				return moved, fmt.Errorf("%s: %w", path, err)
			default:
				moved++
			}
			if err := os.Remove(path); err != nil {
				return moved, err
			}
		}
		os.Remove(filepath.Join(dir, sub.Name())) // empty now, unless something was left in it
	}
	os.Remove(dir)
	return moved, nil
}
