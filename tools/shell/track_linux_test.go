package shell

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startGroup starts sh with a background child in its own process group,
// like a command whose server crashed without its parent-death signal
// reaching it, and returns the group leader.
func startGroup(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & sleep 300")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	deadline := time.Now().Add(5 * time.Second)
	for len(procsIn(dir)) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the group did not start: %v", procsIn(dir))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd
}

func TestRecordedCommandsAreKilledAtStart(t *testing.T) {
	box := newSandbox(t)
	records := t.TempDir()
	crashed, reused := t.TempDir(), t.TempDir()
	victim := startGroup(t, crashed)
	innocent := startGroup(t, reused)
	boot := bootID()
	write := func(name string, r running) {
		if err := writeAtomic(records, filepath.Join(records, name), r); err != nil {
			t.Fatal(err)
		}
	}
	write("1.json", running{PID: victim.Process.Pid, Start: startTime(victim.Process.Pid), Boot: boot})
	// Same pid, other start time: the pid was reused by an unrelated process.
	write("2.json", running{PID: innocent.Process.Pid, Start: startTime(innocent.Process.Pid) + 1, Boot: boot})
	// Recorded in an earlier boot.
	write("3.json", running{PID: innocent.Process.Pid, Start: startTime(innocent.Process.Pid), Boot: "other-boot"})
	write("4.json", running{PID: 1 << 22, Start: 5, Boot: boot}) // gone
	os.WriteFile(filepath.Join(records, "5.json"), []byte("{not json"), 0o600)
	os.WriteFile(filepath.Join(records, ".tmp-123"), []byte("half"), 0o600)

	killed, err := box.Track(records)
	if killed != 1 {
		t.Errorf("killed %d, want 1", killed)
	}
	if err == nil || !strings.Contains(err.Error(), "5.json") {
		t.Errorf("error %v, want one naming the unreadable record", err)
	}
	waitGone(t, crashed) // the leader and the child that stayed in its group
	if len(procsIn(reused)) != 3 {
		t.Errorf("a process whose pid only matches a record was killed: %v left", procsIn(reused))
	}
	if left, _ := os.ReadDir(records); len(left) != 0 {
		t.Errorf("records left after Track: %v", left)
	}

	// From now on each command is recorded while it runs, then forgotten.
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() {
		_, err := box.Run(t.Context(), Command{Script: "echo x > started; sleep 2", Dir: dir})
		done <- err
	}()
	waitFile(t, filepath.Join(dir, "started"))
	deadline := time.Now().Add(5 * time.Second)
	entries, _ := os.ReadDir(records)
	for len(entries) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("records while a command runs: %v", entries)
		}
		time.Sleep(10 * time.Millisecond)
		entries, _ = os.ReadDir(records)
	}
	b, _ := os.ReadFile(filepath.Join(records, entries[0].Name()))
	pid, _ := strconv.Atoi(strings.TrimSuffix(entries[0].Name(), ".json"))
	if pid <= 1 || !strings.Contains(string(b), `"start":`+strconv.FormatUint(startTime(pid), 10)) {
		t.Errorf("record %s = %s, want the running init's pid and start time", entries[0].Name(), b)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(records); len(left) != 0 {
		t.Errorf("record left after the command ended: %v", left)
	}
}
