package home

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed skel
var skel embed.FS

// initDirs are created by Init, relative to the home (R-HOME-1). No
// spill/: cut tool outputs are kept in the log's object store
// (tools.OpenSpills moves an older home's spill/ in once).
var initDirs = []string{
	".", "memory", "workspace", "agents",
	"users/owner/facts", "skills", ".agents/commands",
	"logs", "data",
}

// initFiles maps a skeleton file to where Init puts it and its mode.
var initFiles = []struct {
	skel, path string
	perm       fs.FileMode
}{
	{"agent.yaml", "agent.yaml", 0o644},
	{"AGENTS.md", "AGENTS.md", 0o644},
	{"SOUL.md", "SOUL.md", 0o644},
	{"MEMORY.md", "MEMORY.md", 0o644},
	{"USER.md", "users/owner/USER.md", 0o644},
	{"env", "env", 0o600},
	{"tongket.md", ".agents/commands/tongket.md", 0o644},
	{"delegation.md", "skills/delegation.md", 0o644},
}

// Examples are the seed's personal agents crew init installs next to the
// master (R-HOME-5): personas written by us, schedules disabled.
var Examples = []string{"pong", "ledger", "health-coach"}

// Init creates a home with a working master agent at dir. A home is
// initialised once it has config.yaml: then Init changes nothing and returns
// false. Otherwise it creates what is missing, never overwriting a file, and
// writes config.yaml last so that an interrupted Init is finished by the next.
func Init(dir string) (created bool, err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return false, fmt.Errorf("init home: %w", err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if _, err := os.Lstat(cfgPath); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("init home: %w", err)
	}
	for _, d := range initDirs {
		// 0700: the home holds secrets, memories and conversations.
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return false, fmt.Errorf("init home: %w", err)
		}
	}
	for _, f := range initFiles {
		if err := installSkel(f.skel, filepath.Join(dir, f.path), f.perm, nil); err != nil {
			return false, fmt.Errorf("init home: %w", err)
		}
	}
	for _, name := range Examples {
		if _, err := os.Lstat(filepath.Join(dir, "agents", name)); err == nil {
			continue // installed by the interrupted Init, or the owner's own
		}
		if _, err := placeTemplate(dir, name); err != nil {
			return false, fmt.Errorf("init home: %w", err)
		}
	}
	if _, _, err := EnsureEnvSecret(dir, AuditKeyVar, "audit key of this home: keys the hash chain of crew export (crew verify proves a file came from here)", NewSecret); err != nil {
		return false, fmt.Errorf("init home: %w", err)
	}
	// 0600: config.yaml may hold auth_token.
	zone := strings.NewReplacer("{{TIMEZONE}}", localZone())
	if err := installSkel("config.yaml", cfgPath, 0o600, zone); err != nil {
		return false, fmt.Errorf("init home: %w", err)
	}
	return true, nil
}

// installSkel writes a skeleton file unless path already exists (the owner
// may have put it there before a previous Init was interrupted).
func installSkel(name, path string, perm fs.FileMode, r *strings.Replacer) error {
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	data, err := skel.ReadFile("skel/" + name)
	if err != nil {
		return fmt.Errorf("read skeleton %s: %w", name, err)
	}
	if r != nil {
		data = []byte(r.Replace(string(data)))
	}
	return WriteFileAtomic(path, data, perm)
}

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old file or the new one, never half of it; the file's mode is perm. The
// folder must exist. It is tools.WriteAtomicExact, the one atomic writer.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer root.Close()
	if err := tools.WriteAtomicExact(root, filepath.Base(path), data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// syncDir makes the rename itself durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

func localZone() string { return detectZone(os.ReadFile, os.Readlink) }

// detectZone finds the machine's IANA zone name: /etc/timezone (Debian),
// else the target of the /etc/localtime symlink (most Linux, macOS), else
// UTC. time.Local cannot tell us: its String() is "Local".
func detectZone(readFile func(string) ([]byte, error), readlink func(string) (string, error)) string {
	if b, err := readFile("/etc/timezone"); err == nil {
		if z := strings.TrimSpace(string(b)); validZone(z) {
			return z
		}
	}
	if target, err := readlink("/etc/localtime"); err == nil {
		if _, z, ok := strings.Cut(target, "zoneinfo/"); ok {
			z = strings.TrimPrefix(strings.TrimPrefix(z, "posix/"), "right/")
			if validZone(z) {
				return z
			}
		}
	}
	return DefaultTimezone
}

func validZone(z string) bool {
	_, err := loadZone(z)
	return err == nil
}
