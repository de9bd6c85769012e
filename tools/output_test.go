package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		in        string
		max       int
		wantShown string // prefix before the note
		truncated bool
	}{
		{"short", 10, "short", false},
		{"exactly10!", 10, "exactly10!", false},
		{"anything", 0, "anything", false},
		{"0123456789abc", 10, "0123456789\n[output cut at 10 of 13 characters", true},
		{"ééééé", 3, "ééé\n[output cut at 3 of 5 characters", true},
		{"ééé", 3, "ééé", false}, // 6 bytes, 3 characters
	}
	for _, tt := range tests {
		shown, truncated := Truncate(tt.in, tt.max)
		if truncated != tt.truncated || !strings.HasPrefix(shown, tt.wantShown) || !utf8.ValidString(shown) {
			t.Errorf("Truncate(%q, %d) = %q, %v", tt.in, tt.max, shown, truncated)
		}
		if truncated && !strings.Contains(shown, "tool_output_read") {
			t.Errorf("note does not name tool_output_read: %q", shown)
		}
	}
}

func TestSpillAndReadBack(t *testing.T) {
	env := newWorkspace(t, nil)
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "line %04d é\n", i)
	}
	full := b.String()
	total := utf8.RuneCountInString(full)

	rel, err := Spill(nil, env, "call_1", full)
	if err != nil {
		t.Fatal(err)
	}
	if rel != "spill/conv1/call_1.txt" {
		t.Errorf("rel = %q", rel)
	}
	if fi, err := os.Stat(filepath.Join(env.SpillDir, "call_1.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("spill file: %v, %v", fi, err)
	}
	shown, _ := Truncate(full, 8000)

	// Page through it as the note says, and get back exactly the full text.
	got := shown[:strings.LastIndex(shown, "\n[output cut")]
	offset := 8000
	for offset < total {
		res := call(t, NewFunc[toolOutputReadArgs](ToolOutputRead{}), env, fmt.Sprintf(`{"call_id":"call_1","offset":%d,"limit":20000}`, offset))
		if res.IsError {
			t.Fatalf("read at %d: %s", offset, res.Output)
		}
		i := strings.LastIndex(res.Output, "\n[characters ")
		got += res.Output[:i]
		offset = min(offset+20000, total)
		if offset < total && !strings.Contains(res.Output[i:], fmt.Sprintf("call again with offset %d", offset)) {
			t.Fatalf("footer %q does not point at %d", res.Output[i:], offset)
		}
	}
	if got != full {
		t.Errorf("paged text differs from the full output (%d vs %d bytes)", len(got), len(full))
	}

	runCases(t, NewFunc[toolOutputReadArgs](ToolOutputRead{}), env, []toolCase{
		{args: `{"call_id":"call_1"}`, want: []string{"line 0000 é", fmt.Sprintf("[characters 0–8000 of %d;", total)}},
		{args: fmt.Sprintf(`{"call_id":"call_1","offset":%d}`, total-5), want: []string{"end of output"}},
		{args: fmt.Sprintf(`{"call_id":"call_1","offset":%d}`, total), isError: true, want: []string{"past the end"}},
		{args: `{"call_id":"nope"}`, isError: true, want: []string{"no saved output"}},
		{args: `{"call_id":"../conv2/call_2"}`, isError: true, want: []string{"no saved output"}},
		{args: `{"call_id":"` + filepath.Join(filepath.Dir(env.SpillDir), "conv2", "call_2") + `"}`, isError: true, want: []string{"no saved output"}},
		{args: `{}`, isError: true, want: []string{"required"}},
	})

	// Another conversation's spill is not reachable from this one.
	other := env
	other.SpillDir = filepath.Join(filepath.Dir(env.SpillDir), "conv2")
	if _, err := Spill(nil, other, "call_2", "theirs"); err != nil {
		t.Fatal(err)
	}
	res := call(t, NewFunc[toolOutputReadArgs](ToolOutputRead{}), env, `{"call_id":"call_2"}`)
	if !res.IsError || strings.Contains(res.Output, "theirs") {
		t.Errorf("read another conversation's output: %+v", res)
	}
}

func TestSpillNames(t *testing.T) {
	tests := []struct {
		id   string
		safe bool
	}{
		{"call_abc-1", true},
		{"toolu_01A.b", true},
		{"../../etc/passwd", false},
		{".hidden", false},
		{"a/b", false},
		{"", false},
		{strings.Repeat("x", 200), false},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		name := spillName(tt.id)
		if (name == tt.id+".txt") != tt.safe || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
			t.Errorf("spillName(%q) = %q", tt.id, name)
		}
		if prev, dup := seen[name]; dup {
			t.Errorf("%q and %q share %q", prev, tt.id, name)
		}
		seen[name] = tt.id
	}
	env := newWorkspace(t, nil)
	rel, err := Spill(nil, env, "../../escape", "x")
	if err != nil || strings.Contains(rel, "..") {
		t.Fatalf("Spill: %q, %v", rel, err)
	}
	res := call(t, NewFunc[toolOutputReadArgs](ToolOutputRead{}), env, `{"call_id":"../../escape"}`)
	if res.IsError || !strings.HasPrefix(res.Output, "x\n") {
		t.Errorf("read back an odd id: %+v", res)
	}
}
