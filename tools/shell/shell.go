package shell

import (
	"strconv"
	"strings"
	"time"
)

// Timeouts of a command.
const (
	DefaultTimeout = 120 * time.Second
	MaxTimeout     = 600 * time.Second
)

// Command is one command line to run with /bin/sh -c.
type Command struct {
	Script  string        // the command line
	Dir     string        // working directory, absolute
	Timeout time.Duration // 0 means DefaultTimeout; capped at MaxTimeout
	Env     []string      // the child's whole environment ("K=V"); see Environ
	Sandbox *Policy       // nil: not sandboxed
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
