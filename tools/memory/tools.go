package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/tools"
)

// NamePattern is what a fact or wiki page name must match; it becomes the
// file name with ".md" added, never a path.
const NamePattern = `^[a-z0-9][a-z0-9_-]{0,63}$`

var nameRE = regexp.MustCompile(NamePattern)

// Tools returns the memory and wiki tools, for tools.New. None needs
// approval: they write only the agent's notes, the owner's facts and the
// wiki, and every write is recorded as a tool call first (see the package
// doc). The writing tools of one call share one lock (see files), so a
// process builds its tool set once (cmd/crew does).
//
// Every write is redacted with s.Secrets; s's clock and timezone name the
// day of a note (memory_save) and the days memory_search reads.
func Tools(s tools.Services, opts ...Option) []tools.Tool {
	var o options
	for _, f := range opts {
		f(&o)
	}
	f := &files{svc: s}
	return []tools.Tool{
		tools.NewFunc[memorySaveArgs](memorySave{f}), tools.NewFunc[memorySearchArgs](memorySearch{o.rank, f}),
		tools.NewFunc[userMemorySaveArgs](userMemorySave{f}), tools.NewFunc[userMemoryForgetArgs](userMemoryForget{f}),
		tools.NewFunc[wikiGetArgs](wikiGet{}), tools.NewFunc[wikiSearchArgs](wikiSearch{o.rank}), tools.NewFunc[wikiApplyArgs](wikiApply{f}),
	}
}

// files serialises read-modify-write of memory files across the
// conversations that share one tool set: the owner's facts and the wiki
// are shared by every agent, and a lost update would silently drop a line.
// It holds the services they write with: the home's secrets, the clock
// and the owner's timezone.
type files struct {
	mu  sync.Mutex
	svc tools.Services
}

// now is the time by the clock in the owner's timezone.
func (f *files) now() time.Time { return f.svc.Now() }

// openDir opens an Env folder as a root. A missing folder is a harness
// fault: writing beside it would put memory where nothing reads it.
func openDir(tool, dir string) (*os.Root, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%s: %w: %q", tool, ErrNoDir, dir)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", tool, ErrNoDir, err)
	}
	return r, nil
}

// checkName refuses a name that is not NamePattern; ok is false then and
// res says why, for the model.
func checkName(what, name string) (res tools.Result, ok bool) {
	if nameRE.MatchString(name) {
		return tools.Result{}, true
	}
	return tools.Failf("%s %q is not allowed: use 1 to 64 lowercase letters, digits, '-' or '_', starting with a letter or digit, without \".md\" (%s)", what, name, NamePattern), false
}

// readFile returns name's text beneath root; a missing file is "" and
// exists false.
func readFile(root *os.Root, name string) (text string, exists bool, err error) {
	data, err := root.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(data), true, nil
}

// appendText adds text at the end of name as whole lines, creating the
// file and its directory.
func (f *files) appendText(root *os.Root, name, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, _, err := readFile(root, name)
	if err != nil {
		return err
	}
	return tools.WriteAtomic(f.svc.Secrets, root, name, []byte(joinLines(old, text)), 0o644)
}

// joinLines is text added to old on a new line, ending with a newline.
func joinLines(old, text string) string {
	if old != "" && !strings.HasSuffix(old, "\n") {
		old += "\n"
	}
	return withNewline(old + text)
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
