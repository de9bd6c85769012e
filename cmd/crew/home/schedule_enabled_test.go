package home

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The jobs page's toggle writes enabled: back into agent.yaml, changing
// that value only: comments, quoting and the other schedules stay.
func TestSetScheduleEnabledPreservesTheRestOfTheFile(t *testing.T) {
	dir := t.TempDir()
	orig := `# my agent
name: Pong
schedules:
  # the morning one
  - name: morning-brief
    cron: "30 6 * * *"   # 06:30
    prompt: "Write my brief."
    enabled: false # off for now
  - name: weekly-summary
    cron: "0 18 * * 0"
    command: tongket
`
	path := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := SetScheduleEnabled(dir, "morning-brief", true); err != nil {
		t.Fatal(err)
	}
	if err := SetScheduleEnabled(dir, "weekly-summary", false); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := `# my agent
name: Pong
schedules:
  # the morning one
  - name: morning-brief
    cron: "30 6 * * *"   # 06:30
    prompt: "Write my brief."
    enabled: true # off for now
  - name: weekly-summary
    enabled: false
    cron: "0 18 * * 0"
    command: tongket
`
	if string(got) != want {
		t.Fatalf("agent.yaml after the toggles:\n%s\nwant:\n%s", got, want)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 kept", info.Mode().Perm())
	}
	if err := SetScheduleEnabled(dir, "nope", true); !errors.Is(err, ErrNoSchedule) {
		t.Errorf("an unknown schedule: %v, want ErrNoSchedule", err)
	}
	again, _ := os.ReadFile(path)
	if string(again) != want {
		t.Error("a failed toggle changed the file")
	}
}
