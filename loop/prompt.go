package loop

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/kit"
)

// Prompt is what the system prompt is assembled from.
type Prompt struct {
	AgentDir string // AGENTS.md, SOUL.md, MEMORY.md
	Persona  string // when set, replaces AGENTS.md, SOUL.md and MEMORY.md
	HomeDir  string // users/owner/USER.md and users/owner/facts/*.md
	Roster   string // one line per agent of the crew, made by the caller
	Team     string // the seat's section when on a team (R-TEAM), made by the team runtime
	Now      time.Time
	Location *time.Location
	// CanvasReadOnly: the turn came through the API channel, where nobody
	// has a canvas panel open, and the agent has canvas tools (R-CAN).
	CanvasReadOnly bool
	// Secrets redact the prompt (the home's; nil knows none).
	Secrets *events.Redactor
}

// CanvasReadOnlyLine tells an agent on the API channel that its canvas
// writes are refused.
const CanvasReadOnlyLine = "# Canvases\n\nThis conversation came through the API channel, where nobody has a canvas panel open: you can read canvases (artifact_list, artifact_read) but not create, change or import them here; those tools refuse."

// SystemPrompt assembles an agent's system prompt from its files, read anew
// at every step (R-HOME-4), in the fixed order of R-CTX-1 — stable parts
// first so the provider's prompt cache keeps them: persona (AGENTS.md,
// SOUL.md) → the owner (USER.md, facts) → the agent's MEMORY.md → the
// crew's roster, the kit commands and the skills index → the date line,
// last. The same files give the same bytes. What changes between turns
// (daily notes, the previous conversation) is not here: it travels with
// the turn-opening message as turn notes.
func SystemPrompt(p Prompt) (string, error) {
	var sections []string
	personaFiles := []string{"AGENTS.md", "SOUL.md"}
	if p.Persona != "" {
		sections, personaFiles = append(sections, strings.TrimSpace(p.Persona)), nil
	}
	for _, name := range personaFiles {
		text, err := readText(filepath.Join(p.AgentDir, name))
		if err != nil {
			return "", err
		}
		if text != "" {
			sections = append(sections, text)
		}
	}
	if p.HomeDir != "" {
		owner, err := ownerSection(p.HomeDir)
		if err != nil {
			return "", err
		}
		if owner != "" {
			sections = append(sections, owner)
		}
	}
	var mem string
	if p.Persona == "" {
		var err error
		if mem, err = readText(filepath.Join(p.AgentDir, "MEMORY.md")); err != nil {
			return "", err
		}
	}
	if mem != "" {
		sections = append(sections, "# Your memory (MEMORY.md)\n\n"+Unframe(mem))
	}
	if p.Roster != "" {
		sections = append(sections, "# The crew\n\n"+p.Roster)
	}
	if p.Team != "" {
		sections = append(sections, p.Team)
	}
	sections = append(sections, kitSections(p.HomeDir, p.AgentDir)...)
	if p.CanvasReadOnly {
		sections = append(sections, CanvasReadOnlyLine)
	}
	loc := p.Location
	if loc == nil {
		loc = time.UTC
	}
	sections = append(sections, fmt.Sprintf("Today: %s.", p.Now.In(loc).Format("2006-01-02")))
	// The files are the owner's and the agents': a secret pasted into one
	// is not sent to the model (R-SEC-3).
	return p.Secrets.String(strings.Join(sections, "\n\n")), nil
}

// kitSections are the kit commands and the skills index (R-CTX-1): what
// the owner can send as "/name", and the skills the agent loads with
// skill_read (always-on ones in full). A kit file that does not parse is
// named in the prompt instead of failing the turn; crew doctor reports it
// too.
func kitSections(homeDir, agentDir string) []string {
	var out []string
	cmds, err := kit.Commands(homeDir, agentDir)
	if sec := kit.CommandsSection(cmds); sec != "" || err != nil {
		out = append(out, withProblem(cmp.Or(sec, "# Kit commands"), err))
	}
	skills, err := kit.Skills(homeDir, agentDir)
	if sec := kit.SkillsSection(skills); sec != "" || err != nil {
		out = append(out, withProblem(cmp.Or(sec, "# Skills"), err))
	}
	return out
}

// withProblem adds to a section the files that could not be read for it.
func withProblem(section string, err error) string {
	if err == nil {
		return section
	}
	return section + "\n\n(Some files were not loaded: " + strings.Join(strings.Fields(err.Error()), " ") + ")"
}

// ownerSection is USER.md and the facts files, in name order.
func ownerSection(homeDir string) (string, error) {
	dir := filepath.Join(homeDir, "users", "owner")
	user, err := readText(filepath.Join(dir, "USER.md"))
	if err != nil {
		return "", err
	}
	var parts []string
	if user != "" {
		parts = append(parts, user)
	}
	facts, err := filepath.Glob(filepath.Join(dir, "facts", "*.md"))
	if err != nil {
		return "", err
	}
	sort.Strings(facts)
	for _, f := range facts {
		text, err := readText(f)
		if err != nil {
			return "", err
		}
		if text != "" {
			parts = append(parts, "## "+strings.TrimSuffix(filepath.Base(f), ".md")+"\n\n"+text)
		}
	}
	if len(parts) == 0 {
		return "", nil
	}
	// Facts are saved from conversations, web text included: none may
	// read as a harness frame (R-SEC-1).
	return "# About the owner\n\n" + Unframe(strings.Join(parts, "\n\n")), nil
}

// readText reads a file trimmed; a missing file is empty.
func readText(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("system prompt: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// promptMemo is a pass's last assembled system prompt: what it was made
// from (the Prompt, Now as its day) and the stamp of the files it read.
type promptMemo struct {
	in    Prompt
	day   string
	stamp []byte
	text  string
}

// systemPrompt is SystemPrompt(p), assembled again only when p or one of
// its files changed since the pass last assembled it (R-HOME-4 still
// holds at every step: the files are looked at — stat'ed — every time,
// read again when one changed, was added or was removed). The text is
// redacted again each time: a secret learnt since is not sent either.
// The stamps are made in two buffers the pass keeps (the memo's and
// t.stampBuf), so a step's stamp allocates nothing once they have grown.
func (t *Turn) systemPrompt(p Prompt) (string, error) {
	day := p.Now.In(cmp.Or(p.Location, time.UTC)).Format(time.DateOnly)
	stamp := promptStamp(t.stampBuf[:0], p)
	key := p
	key.Now = time.Time{}
	if m := t.prompt; m.text != "" && m.in == key && m.day == day && bytes.Equal(m.stamp, stamp) {
		t.stampBuf = stamp
		return p.Secrets.String(m.text), nil
	}
	text, err := SystemPrompt(p)
	if err != nil {
		t.stampBuf = stamp
		return "", err
	}
	t.stampBuf = t.prompt.stamp // the old memo's buffer is the next step's
	t.prompt = promptMemo{in: key, day: day, stamp: stamp, text: text}
	return text, nil
}

// promptStamp appends to b what identifies the files SystemPrompt reads
// for p: each file's and each listed folder's entries' size, times and
// inode, or absence. Any write, rename, addition or removal changes it.
// A step makes one (R-HOME-4), so it costs the stats and little else: no
// formatting, no file information kept, and a folder found missing is
// not listed.
func promptStamp(b []byte, p Prompt) []byte {
	if p.Persona == "" {
		for _, name := range []string{"AGENTS.md", "SOUL.md", "MEMORY.md"} {
			b, _ = stampFile(b, filepath.Join(p.AgentDir, name))
		}
	}
	var dirs []string
	if p.HomeDir != "" {
		owner := filepath.Join(p.HomeDir, "users", "owner")
		b, _ = stampFile(b, filepath.Join(owner, "USER.md"))
		dirs = append(dirs, filepath.Join(owner, "facts"))
	}
	for _, dir := range append(dirs, kit.Dirs(p.HomeDir, p.AgentDir)...) {
		var isDir bool
		if b, isDir = stampFile(b, dir); !isDir {
			continue
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, _ = stampFile(b, filepath.Join(dir, e.Name()))
		}
	}
	return b
}

// stampFile appends path's line of the stamp to b and reports whether
// path is a folder. It stats into a Stat_t of its own (os.Stat would
// allocate its file information).
func stampFile(b []byte, path string) ([]byte, bool) {
	b = append(b, path...)
	var st syscall.Stat_t
	err := syscall.Stat(path, &st) // through symlinks, as the reads go
	for err == syscall.EINTR {
		err = syscall.Stat(path, &st)
	}
	if err != nil {
		return append(b, " -\n"...), false
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(st.Size), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, st.Mtim.Nano(), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(st.Ino), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, st.Ctim.Nano(), 10)
	return append(b, '\n'), st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}
