package tools

import (
	"context"
	"fmt"
	"slices"
)

// Registry holds the tools a harness offers, by name.
type Registry struct {
	byName map[string]Tool
	names  []string       // sorted
	index  map[string]int // a name's place in names
}

// New returns a registry of tools. Names must be unique and non-empty.
func New(tools ...Tool) (*Registry, error) {
	r := &Registry{byName: make(map[string]Tool, len(tools))}
	for _, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("tools: nil tool")
		}
		name := t.Def().Name
		if name == "" {
			return nil, fmt.Errorf("tools: tool %T has no name", t)
		}
		if _, dup := r.byName[name]; dup {
			return nil, fmt.Errorf("tools: %w: %s", ErrDuplicateTool, name)
		}
		r.byName[name] = t
		r.names = append(r.names, name)
	}
	slices.Sort(r.names)
	r.index = make(map[string]int, len(r.names))
	for i, n := range r.names {
		r.index[n] = i
	}
	return r, nil
}

// Lookup returns the tool called name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Names returns every tool name, sorted.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// Defaults returns, sorted, the names of the tools whose declaration says
// every agent gets them unless its agent.yaml lists its own (Def.Default).
func (r *Registry) Defaults() []string {
	var out []string
	for _, n := range r.names {
		if r.byName[n].Def().Default {
			out = append(out, n)
		}
	}
	return out
}

// Defs returns the definitions of the named tools sorted by name, so the
// prompt is the same whatever order config lists them in. Unknown names are
// skipped (check them against Lookup when loading config), a name listed
// twice is declared once; nil names means every tool. A step asks for its
// declarations, so the names are looked up, not searched for.
func (r *Registry) Defs(names []string) []Def {
	if names == nil {
		names = r.names
	}
	asked := make([]bool, len(r.names))
	n := 0
	for _, name := range names {
		if i, ok := r.index[name]; ok && !asked[i] {
			asked[i] = true
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]Def, 0, n)
	for i, ok := range asked {
		if ok {
			out = append(out, r.byName[r.names[i]].Def())
		}
	}
	return out
}

// Run runs one call. An unknown tool is an error Result, as the model may
// invent names. The gate is the caller's business.
func (r *Registry) Run(ctx context.Context, env Env, c Call) (Result, error) {
	t, ok := r.byName[c.Name]
	if !ok {
		return Failf("unknown tool %q", c.Name), nil
	}
	return t.Run(ctx, env, c.Arguments)
}
