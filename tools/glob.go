package tools

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// glob matches slash-separated, workspace-relative paths against a pattern
// in the doublestar style: "**" as a whole segment matches any number of
// directories (including none), other segments follow path.Match (* ? [...]
// and \ escapes, never crossing "/"), and {a,b} gives alternatives.
type glob struct {
	alts [][]string // each alternative split into segments
}

const maxGlobAlternatives = 64

func compileGlob(pattern string) (*glob, error) {
	pattern = strings.TrimPrefix(pattern, "./")
	if pattern == "" {
		return nil, errors.New("empty pattern")
	}
	if strings.HasPrefix(pattern, "/") {
		return nil, errors.New("the pattern must be relative to the workspace")
	}
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &glob{}
	for _, alt := range alts {
		var segs []string
		for _, s := range strings.Split(alt, "/") {
			switch {
			case s == "" || s == ".":
				continue
			case s == "..":
				return nil, errors.New("the pattern may not contain ..")
			case s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**":
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("bad pattern segment %q", s)
			}
			segs = append(segs, s)
		}
		if len(segs) == 0 {
			return nil, errors.New("the pattern matches nothing")
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// Match reports whether the slash path rel matches.
func (g *glob) Match(rel string) bool {
	name := strings.Split(rel, "/")
	for _, pat := range g.alts {
		if matchSegs(pat, name) {
			return true
		}
	}
	return false
}

// MayMatchBelow reports whether some path beneath directory dir could match,
// so a walk can skip directories that cannot.
func (g *glob) MayMatchBelow(dir string) bool {
	if dir == "." {
		return true
	}
	segs := strings.Split(dir, "/")
	for _, pat := range g.alts {
		if prefixMayMatch(pat, segs) {
			return true
		}
	}
	return false
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			pat = pat[1:]
			if len(pat) == 0 {
				return true
			}
			for i := range len(name) + 1 {
				if matchSegs(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

func prefixMayMatch(pat, dir []string) bool {
	for len(dir) > 0 {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[0], dir[0]); !ok {
			return false
		}
		pat, dir = pat[1:], dir[1:]
	}
	return len(pat) > 0
}

// expandBraces turns "a{b,c{d,e}}f" into abf, acdf, acef.
func expandBraces(p string) ([]string, error) {
	open, depth := -1, 0
	var commas []int
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
				commas = commas[:0]
			}
			depth++
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		case '}':
			if depth == 0 {
				return nil, errors.New("unmatched } in pattern")
			}
			depth--
			if depth > 0 {
				continue
			}
			prefix, suffix := p[:open], p[i+1:]
			bounds := append(append([]int{open}, commas...), i)
			var out []string
			for k := 0; k+1 < len(bounds); k++ {
				rest, err := expandBraces(prefix + p[bounds[k]+1:bounds[k+1]] + suffix)
				if err != nil {
					return nil, err
				}
				out = append(out, rest...)
				if len(out) > maxGlobAlternatives {
					return nil, fmt.Errorf("more than %d alternatives in pattern", maxGlobAlternatives)
				}
			}
			return out, nil
		}
	}
	if depth != 0 {
		return nil, errors.New("unmatched { in pattern")
	}
	return []string{p}, nil
}
