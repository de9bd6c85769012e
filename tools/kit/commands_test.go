package kit

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCommands(t *testing.T) {
	home, agent := homeAndAgent(t)
	write(t, home, ".agents/commands/tongket.md", "---\ndescription: Sum up the day\n---\nSum up today's notes.")
	write(t, home, ".agents/commands/review.md", "---\ndescription: Home review\n---\nHome.")
	write(t, agent, ".agents/commands/review.md", "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $ARGUMENTS carefully.")
	write(t, agent, ".agents/commands/plain.md", "# Plan the week ahead\n\nList what is due.")

	got, err := Commands(home, agent)
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{Name: "plain", Description: "Plan the week ahead", Path: filepath.Join(agent, ".agents/commands/plain.md"), Body: "# Plan the week ahead\n\nList what is due."},
		{Name: "review", Description: "Review a file", Path: filepath.Join(agent, ".agents/commands/review.md"), Body: "Review $ARGUMENTS carefully.", ArgumentHint: "<file>"},
		{Name: "tongket", Description: "Sum up the day", Path: filepath.Join(home, ".agents/commands/tongket.md"), Body: "Sum up today's notes."},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("command %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}

	section := CommandsSection(got)
	wantSection := `# Kit commands

The owner can send these commands as messages, as "/name" followed by any arguments; the harness then replaces the message with the command's prompt. You may suggest them to the owner.

- /plain: Plan the week ahead
- /review <file>: Review a file
- /tongket: Sum up the day`
	if section != wantSection {
		t.Errorf("section:\n%s\nwant:\n%s", section, wantSection)
	}
	if CommandsSection(nil) != "" {
		t.Error("no commands gave a section")
	}
}

func TestCommandsMasterOnce(t *testing.T) {
	home := t.TempDir()
	write(t, home, ".agents/commands/tongket.md", "Sum up.")
	got, err := Commands(home, home)
	if err != nil || len(got) != 1 {
		t.Errorf("got %+v, %v; want one command", got, err)
	}
}

func TestCommandDescriptionFallbackIsCut(t *testing.T) {
	home := t.TempDir()
	write(t, home, ".agents/commands/long.md", strings.Repeat("word ", 50))
	got, err := Commands(home, "")
	if err != nil {
		t.Fatal(err)
	}
	if d := got[0].Description; len([]rune(d)) != maxFallbackDescription || !strings.HasSuffix(d, "…") {
		t.Errorf("description %q (%d characters)", d, len([]rune(d)))
	}
}

func TestExpand(t *testing.T) {
	cmds := []Command{
		{Name: "review", Body: "Review $ARGUMENTS. Then review $ARGUMENTS again."},
		{Name: "tongket", Body: "Sum up the day."},
		{Name: "tổng", Body: "Unicode name."},
	}
	tests := []struct {
		text       string
		ok         bool
		name, want string
	}{
		{"/tongket", true, "tongket", "Sum up the day."},
		{"  /tongket  \n", true, "tongket", "Sum up the day."},
		{"/tongket for Monday", true, "tongket", "Sum up the day.\n\nArguments: for Monday"},
		{"/tongket\nfirst line\nsecond", true, "tongket", "Sum up the day.\n\nArguments: first line\nsecond"},
		{"/review main.go", true, "review", "Review main.go. Then review main.go again."},
		{"/review", true, "review", "Review . Then review  again."},
		{"/tổng x", true, "tổng", "Unicode name.\n\nArguments: x"},
		{"/tongketx", false, "", ""},
		{"/Tongket", false, "", ""},
		{"tongket", false, "", ""},
		{"please /tongket", false, "", ""},
		{"/", false, "", ""},
		{"", false, "", ""},
	}
	for _, tc := range tests {
		name, prompt, ok := Expand(cmds, tc.text)
		if ok != tc.ok || name != tc.name || prompt != tc.want {
			t.Errorf("Expand(%q) = %q, %q, %v; want %q, %q, %v", tc.text, name, prompt, ok, tc.name, tc.want, tc.ok)
		}
	}
}
