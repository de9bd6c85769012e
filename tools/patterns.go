package tools

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// compiled caches shell patterns: they come from config and are matched on
// every gate question.
var compiled sync.Map // string -> *regexp.Regexp or error

func compilePattern(p string) (*regexp.Regexp, error) {
	if v, ok := compiled.Load(p); ok {
		if re, ok := v.(*regexp.Regexp); ok {
			return re, nil
		}
		return nil, v.(error)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		compiled.Store(p, err)
		return nil, err
	}
	compiled.Store(p, re)
	return re, nil
}

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
