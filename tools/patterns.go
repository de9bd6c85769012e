package tools

import (
	"container/list"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// compiled caches the patterns config.yaml and the agents' files name (the
// shell's ask, allow and deny patterns, the browser's ask patterns): they
// are matched on every gate question. A pattern is a pure function of its
// text, so the memo is shared by the process; it is bounded, because a
// home whose config changes while it runs brings new texts.
var compiled = newPatternCache(patternCacheMax)

// patternCacheMax is how many compiled patterns (or compile errors) the
// process keeps; the least recently used goes first.
const patternCacheMax = 512

// patternCache is a bounded memo of compiled regular expressions by their
// source text, least recently used let go first.
type patternCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *patternEntry, most recently used first
	byKey map[string]*list.Element
}

type patternEntry struct {
	src string
	re  *regexp.Regexp
	err error
}

func newPatternCache(max int) *patternCache {
	return &patternCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// compile returns src compiled, from the memo when it holds it.
func (c *patternCache) compile(src string) (*regexp.Regexp, error) {
	c.mu.Lock()
	if el, ok := c.byKey[src]; ok {
		c.order.MoveToFront(el)
		e := el.Value.(*patternEntry)
		c.mu.Unlock()
		return e.re, e.err
	}
	c.mu.Unlock()
	re, err := regexp.Compile(src)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[src]; !ok {
		c.byKey[src] = c.order.PushFront(&patternEntry{src: src, re: re, err: err})
		for c.order.Len() > c.max {
			old := c.order.Back()
			c.order.Remove(old)
			delete(c.byKey, old.Value.(*patternEntry).src)
		}
	}
	return re, err
}

// len is how many patterns the memo holds.
func (c *patternCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// CompilePattern compiles a pattern of the owner's policy (src is the
// regular expression as compiled, flags included) through the process's
// bounded memo.
func CompilePattern(src string) (*regexp.Regexp, error) { return compiled.compile(src) }

func compilePattern(p string) (*regexp.Regexp, error) { return compiled.compile(p) }

// firstMatch returns the first pattern matching command. With failClosed an
// invalid pattern counts as a match (deny and ask patterns); otherwise it
// never matches (allow patterns).
func firstMatch(patterns []string, command string, failClosed bool) (pattern string, ok bool) {
	for _, p := range patterns {
		re, err := compilePattern(p)
		if err != nil {
			if failClosed {
				return p, true
			}
			continue
		}
		if re.MatchString(command) {
			return p, true
		}
	}
	return "", false
}

// compound reports whether a command chains, pipes, substitutes or
// redirects, so that an allow pattern written for its first word cannot
// vouch for the rest.
func compound(command string) bool {
	return strings.ContainsAny(command, ";&|`<>\n\r") || strings.Contains(command, "$(")
}

// ValidatePolicy checks that every shell pattern compiles, for config
// loading; the error names the setting and the pattern.
func ValidatePolicy(p AgentPolicy) error {
	var errs []error
	for _, set := range []struct {
		name     string
		patterns []string
	}{
		{"shell_ask_patterns", p.ShellAskPatterns},
		{"shell_allow_patterns", p.ShellAllowPatterns},
		{"shell_deny_patterns", p.ShellDenyPatterns},
		{"browser_ask_patterns", p.BrowserAskPatterns},
	} {
		for _, pat := range set.patterns {
			if _, err := regexp.Compile(pat); err != nil {
				errs = append(errs, fmt.Errorf("%s: %q: %w", set.name, pat, err))
			}
		}
	}
	return errors.Join(errs...)
}
