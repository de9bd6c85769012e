package shell

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Timeouts of a command.
const (
	DefaultTimeout = 120 * time.Second
	MaxTimeout     = 600 * time.Second
)

// Command is one command line to run with /bin/sh -c, or one program
// (Exec). Every child process an agent's action causes starts here, with
// the same isolation (see the package comment).
type Command struct {
	Script string // the command line
	// Exec, when set, is the program to run instead of /bin/sh -c Script:
	// Exec[0] is an absolute path or a name looked up in the command's own
	// PATH (Env), the rest its arguments.
	Exec    []string
	Dir     string        // working directory, absolute
	Timeout time.Duration // 0 means DefaultTimeout; capped at MaxTimeout
	// Lasting runs the command until ctx ends, with no timeout: a server
	// the crew keeps (an MCP server over stdio), not a one-off command.
	Lasting bool
	Env     []string // the child's whole environment ("K=V"); see Environ
	// Stdin is what the command reads on its standard input; nil is empty.
	Stdin io.Reader
	// Stdout, when set, receives the command's standard output (an *os.File
	// is handed to it directly); Output.Text then holds its standard error
	// only.
	Stdout io.Writer
	// Stderr, when set, also receives what the command writes to its
	// standard error. Stdout and stderr then come through two pipes, so
	// their interleaving in Output.Text is only approximate; when Stderr is
	// nil both share one pipe and Text keeps their exact order.
	Stderr io.Writer
	// View hides the crew home from the command (see HomeView). Nil hides
	// nothing; the command still gets its own mount and PID namespaces.
	View    *View
	Sandbox *Policy // nil: not sandboxed
	// Started, when set, is told the pid of the command's namespace init
	// (also its process group) once it started.
	Started func(pid int)
}

// View is what a command sees of the crew home: the home is covered by an
// empty read-only directory, then Read and Write are put back.
type View struct {
	Home  string   // absolute path of the home
	Read  []string // absolute paths under Home shown read-only
	Write []string // absolute paths under Home shown writable
	// Mask are absolute paths outside Home also covered by an empty
	// directory (other agents' folders that the home links to).
	Mask []string
}

// Grant shows dir writable as well, when it is under the home: the folder
// the harness itself chose for the command (a teammate's claimed task,
// which may be another agent's workspace or a worktree in it), never a
// path the model named.
func (v *View) Grant(dir string) {
	dir = filepath.Clean(dir)
	if within(v.Home, dir) && !slices.Contains(v.Write, dir) {
		v.Write = append(v.Write, dir)
	}
}

// HomeView is the view of the home for the agent whose folder is agentDir
// (the home itself for the master). It shows the home's shared kits
// (skills/, .agents/) read-only and the agent's own folder: for the master
// its workspace (writable) and AGENTS.md, SOUL.md, MEMORY.md, agent.yaml,
// memory/ (read-only); for any other agent its folder (read-only) with its
// workspace (writable). Everything else is hidden: env and config.yaml
// (which may hold the auth token), data/, browser/, desktop/, spill/, logs/,
// users/, wiki/, other agents' folders, and anything the owner added. A
// writePath under the home is shown writable only inside what the agent
// sees anyway; elsewhere in the home it stays hidden.
func HomeView(home, agentDir string, writePaths ...string) *View {
	home = filepath.Clean(home)
	if agentDir == "" {
		agentDir = home
	}
	agentDir = filepath.Clean(agentDir)
	v := &View{Home: home}
	j := func(names ...string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = filepath.Join(home, n)
		}
		return out
	}
	v.Read = j("skills", ".agents")
	var own []string
	if agentDir == home {
		own = j("AGENTS.md", "SOUL.md", "MEMORY.md", "agent.yaml", "memory", "workspace")
		v.Read = append(v.Read, own[:5]...)
		v.Write = append(v.Write, own[5])
	} else if within(home, agentDir) {
		own = []string{agentDir}
		v.Read = append(v.Read, agentDir)
		v.Write = append(v.Write, filepath.Join(agentDir, "workspace"))
	}
	for _, w := range writePaths {
		w = filepath.Clean(w)
		if !within(home, w) {
			continue
		}
		for _, o := range own {
			if within(o, w) {
				v.Write = append(v.Write, w)
				break
			}
		}
	}
	// Agent folders may be symlinks to elsewhere: hide the others' targets.
	ownReal, _ := filepath.EvalSymlinks(agentDir)
	entries, _ := os.ReadDir(filepath.Join(home, "agents"))
	for _, e := range entries {
		p := filepath.Join(home, "agents", e.Name())
		if p == agentDir {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err == nil && !within(home, real) && real != ownReal {
			if fi, err := os.Stat(real); err == nil && fi.IsDir() {
				v.Mask = append(v.Mask, real)
			}
		}
	}
	return v
}

// within reports whether path is dir or beneath it (lexically).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// Policy is what a sandboxed command may do besides reading and executing.
type Policy struct {
	// WritePaths are absolute paths the command may write beneath (a file
	// path allows writing that file). Paths that do not exist are skipped.
	// A private temp dir, exported as TMPDIR, is always added.
	WritePaths []string
	// Network false runs the command in an empty network namespace.
	Network bool
}

// Output is what a command printed and how it ended.
type Output struct {
	Text     string // stdout and stderr interleaved, valid UTF-8
	ExitCode int    // -1 when killed by a signal
	Signal   string // the signal that killed it, if any
	TimedOut bool
	Dropped  int64 // bytes cut from the middle of a very large output
	// Refused says what the crew's proxy refused the command and why
	// (the last few, oldest first): a tool that reports only "403" or
	// "connection failed" does not say.
	Refused []string
}

// Environ filters a parent environment down to what a command may see:
// locale, paths and toolchain settings, never secrets such as API keys
// (R-SEC-3). TERM is dumb and pagers are off because nobody is at a terminal.
func Environ(parent []string) []string {
	out := []string{"TERM=dumb", "PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "NO_COLOR=1"}
	for _, kv := range parent {
		k, _, ok := strings.Cut(kv, "=")
		if ok && keepEnv(k) {
			out = append(out, kv)
		}
	}
	return out
}

var envKeep = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TZ": true,
	"GOPATH": true, "GOROOT": true, "GOCACHE": true, "GOMODCACHE": true, "GOFLAGS": true,
	"GOPROXY": true, "GONOSUMDB": true, "GOPRIVATE": true, "GOTOOLCHAIN": true,
	"CARGO_HOME": true, "RUSTUP_HOME": true, "JAVA_HOME": true, "NODE_PATH": true,
	"PYENV_ROOT": true, "VIRTUAL_ENV": true,
}

func keepEnv(k string) bool {
	return envKeep[k] || strings.HasPrefix(k, "LC_") || strings.HasPrefix(k, "XDG_")
}

// setEnv returns env with k set to v, replacing any earlier value.
func setEnv(env []string, k, v string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

// capture keeps the head and the tail of a stream and counts what it drops,
// so a runaway command cannot exhaust memory and the end of a long build log
// (where the error usually is) survives.
type capture struct {
	head, tail []byte // tail is a ring once full
	headMax    int
	tailMax    int
	tailStart  int // index of the oldest byte in a full ring
	total      int64
}

func newCapture(headMax, tailMax int) *capture {
	return &capture{headMax: headMax, tailMax: tailMax}
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(c.tail) < c.tailMax {
			k := min(c.tailMax-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(c.tail[c.tailStart:], p)
		c.tailStart = (c.tailStart + k) % c.tailMax
		p = p[k:]
	}
	return n, nil
}

// text returns the captured output and how many bytes were dropped.
func (c *capture) text() (string, int64) {
	tail := append(append([]byte(nil), c.tail[c.tailStart:]...), c.tail[:c.tailStart]...)
	dropped := c.total - int64(len(c.head)) - int64(len(tail))
	var b strings.Builder
	b.Write(c.head)
	if dropped > 0 {
		b.WriteString("\n[… " + strconv.FormatInt(dropped, 10) + " bytes of output dropped …]\n")
	}
	b.Write(tail)
	return strings.ToValidUTF8(b.String(), "\uFFFD"), dropped
}

// Protection is one protection of shell commands and whether this machine
// gives it (see Protections).
type Protection struct {
	Name   string // "mount namespace", "PID namespace", "Landlock", "network namespace", "Unix-socket block"
	OK     bool
	Detail string // what it does here, or why it is missing and what is refused
}
