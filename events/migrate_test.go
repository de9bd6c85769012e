package events_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// The walker over an older home's folder: a file that cannot be placed
// stops it with an error naming the file, and nothing not yet stored is
// deleted; once place takes the rest, the files and folders are gone but
// the ones place left (ErrSkip); one the store had (ErrExists) goes
// uncounted, and a crash's temp file goes unread.
func TestMigrateFilesStopsAtAFileItCannotPlace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "old")
	files := map[string]string{
		"a/1.txt":        "one",
		"a/2.txt":        "two",
		"a/.3.txt.tmp-x": "cut by a crash",
		"b/1.txt":        "b one",
		"b/had.txt":      "older than the store's",
		"b/README":       "not the store's",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "stray"), []byte("a file beside the folders"), 0o600)
	stored := map[string]string{}
	refuse := "a/2.txt"
	place := func(sub, name string, data []byte) error {
		switch key := sub + "/" + name; {
		case key == refuse:
			return errors.New("the store is down")
		case name == "README":
			return events.ErrSkip
		case name == "had.txt":
			return events.ErrExists
		default:
			stored[key] = string(data)
			return nil
		}
	}
	left := func() []string {
		var got []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				got = append(got, filepath.ToSlash(rel))
			}
			return nil
		})
		return got
	}

	moved, err := events.MigrateFiles(dir, place)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "a", "2.txt")) || !strings.Contains(err.Error(), "the store is down") {
		t.Errorf("MigrateFiles with a/2.txt refused: %v, want an error naming it", err)
	}
	if moved != 1 || len(stored) != 1 || stored["a/1.txt"] != "one" {
		t.Errorf("moved %d, stored %v; want a/1.txt only", moved, stored)
	}
	if got, want := strings.Join(left(), " "), "a/2.txt b/1.txt b/README b/had.txt stray"; got != want {
		t.Errorf("left after the stop: %s; want %s", got, want)
	}

	refuse = ""
	moved, err = events.MigrateFiles(dir, place)
	if err != nil || moved != 2 {
		t.Errorf("MigrateFiles again = %d, %v; want 2 moved", moved, err)
	}
	if stored["a/2.txt"] != "two" || stored["b/1.txt"] != "b one" || len(stored) != 3 {
		t.Errorf("stored %v", stored)
	}
	if got, want := strings.Join(left(), " "), "b/README stray"; got != want {
		t.Errorf("left after the move: %s; want %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Errorf("the emptied folder a is still there (%v)", err)
	}
	if moved, err := events.MigrateFiles(filepath.Join(dir, "none"), place); moved != 0 || err != nil {
		t.Errorf("MigrateFiles of no folder = %d, %v", moved, err)
	}
}
