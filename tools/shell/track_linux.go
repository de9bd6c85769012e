package shell

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/my-agent-crew/crew/tools/atomicfile"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// running is one record: the namespace init of a command (also its process
// group leader), identified by pid and start time so that a reused pid is
// never killed.
type running struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"` // field 22 of /proc/<pid>/stat, clock ticks since boot
	Boot  string `json:"boot"`  // /proc/sys/kernel/random/boot_id
}

// Track kills the commands a previous server recorded in dir and did not
// see end (it crashed, and the parent-death signal did not reach them), and
// records every command s starts from now on in dir, one file
// per command, written atomically and removed when the command ends. It
// returns how many commands it killed. Call it once at start, before any
// command runs and before recovery closes the calls those commands served.
func (s *Sandbox) Track(dir string) (killed int, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("shell: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("shell: %w", err)
	}
	boot := bootID()
	var errs []error
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if !strings.HasSuffix(e.Name(), ".json") {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				os.Remove(path)
			}
			continue
		}
		data, err := os.ReadFile(path)
		var r running
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("shell: %s: %w", path, err))
			os.Remove(path)
			continue
		}
		if r.PID > 1 && r.Boot == boot && startTime(r.PID) == r.Start && r.Start != 0 {
			// The group first (everything that stayed in it), then the
			// init: its death kills the rest of its PID namespace.
			unix.Kill(-r.PID, unix.SIGKILL)
			unix.Kill(r.PID, unix.SIGKILL)
			killed++
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("shell: %w", err))
		}
	}
	s.trackDir.Store(&dir)
	return killed, errors.Join(errs...)
}

// record notes a started command and returns the function that forgets it.
func (s *Sandbox) record(pid int) func() {
	dp := s.trackDir.Load()
	if dp == nil {
		return func() {}
	}
	r := running{PID: pid, Start: startTime(pid), Boot: bootID()}
	path := filepath.Join(*dp, strconv.Itoa(pid)+".json")
	if err := writeAtomic(*dp, path, r); err != nil {
		return func() {}
	}
	return func() { os.Remove(path) }
}

// writeAtomic writes v as JSON to path in dir, mode 0600, through the one
// atomic writer.
func writeAtomic(dir, path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return atomicfile.Write(root, filepath.Base(path), data, 0o600, true)
}

// startTime is the start time of pid in clock ticks since boot, 0 when
// there is no such process.
func startTime(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}
