package loop

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

// ToolSearchTool finds MCP tools and declares them from the next model
// call on (R-MCP).
const ToolSearchTool = "tool_search"

// maxSearchHits is how many matches one search declares.
const maxSearchHits = 8

//go:embed tool_search.md
var toolSearchDescription string

// MCP is the crew's MCP servers as a turn needs them (tools/mcp.Pool).
type MCP interface {
	// Tools are the offered tools of the named servers, sorted by name,
	// and why some could not be listed.
	Tools(ctx context.Context, servers []string) ([]tools.Tool, []error)
	// Lookup finds one offered tool of the named servers by name.
	Lookup(ctx context.Context, servers []string, name string) (tools.Tool, bool)
}

// remoteTool is what an MCP tool tells tool_search beyond its Def.
type remoteTool interface {
	Server() string
	Remote() string
	ReadOnly() bool
	ReadOnlyHint() bool
	// Approval is how the gate treats its calls, as a sentence.
	Approval() string
	// About is what the server says of the tool, fenced as data.
	About() string
}

type toolSearch struct{}

func (toolSearch) Def() tools.Def {
	return tools.Def{Name: ToolSearchTool, Description: strings.TrimSpace(toolSearchDescription),
		Params: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"words to look for in tool names and descriptions"},` +
			`"names":{"type":"array","items":{"type":"string"},"description":"exact tool names to load"}}}`)}
}

func (toolSearch) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Failf("tool_search runs only within a turn of the loop"), nil
}

func (toolSearch) traits() traits { return traits{instant: true} }

type toolSearchArgs struct {
	Query string   `json:"query"`
	Names []string `json:"names"`
}

func (toolSearch) vet(_ *Turn, c events.ToolCallRequest) (string, string, bool) {
	var a toolSearchArgs
	if err := json.Unmarshal(c.Arguments, &a); err != nil || (strings.TrimSpace(a.Query) == "" && len(a.Names) == 0) {
		return `Not run: tool_search needs {"query": "<words>"} or {"names": ["<exact tool name>", …]}.`, "", true
	}
	return "", "", false
}

// answer searches the agent's MCP tools; the matches are recorded in the
// result's meta ("loaded"), which the conversation's state folds into the
// set declared from then on.
func (toolSearch) answer(ctx context.Context, t *Turn, c *toolCall) (tools.Result, error) {
	var a toolSearchArgs
	json.Unmarshal(c.Arguments, &a)
	all, problems := t.mcpTools(ctx)
	var hits []tools.Tool
	var refused []string
	if len(a.Names) > 0 {
		for _, n := range a.Names {
			i := slices.IndexFunc(all, func(x tools.Tool) bool { return x.Def().Name == n })
			if i < 0 {
				refused = append(refused, n)
				continue
			}
			if !slices.Contains(hits, all[i]) {
				hits = append(hits, all[i])
			}
		}
	} else {
		hits = searchTools(all, a.Query)
	}
	var b strings.Builder
	var loaded []string
	var declared []DeclaredTool
	for _, tool := range hits {
		d := tool.Def()
		loaded = append(loaded, d.Name)
		declared = append(declared, declaredOf(tool))
		fmt.Fprintf(&b, "- %s", d.Name)
		if rt, ok := tool.(remoteTool); ok {
			fmt.Fprintf(&b, " (MCP server %s, tool %s", rt.Server(), rt.Remote())
			b.WriteString("; " + strings.ToLower(rt.Approval()[:1]) + rt.Approval()[1:])
			if !rt.ReadOnly() && rt.ReadOnlyHint() {
				b.WriteString(" (its server calls it read-only; only the owner's read_only_tools counts)")
			}
			b.WriteString(")")
		}
		fmt.Fprintf(&b, ":\n%s\n", aboutTool(t.secrets(), tool))
	}
	var out strings.Builder
	switch {
	case len(hits) > 0:
		fmt.Fprintf(&out, "Found %d tool(s); each is declared to you from your next step on:\n%s", len(hits), b.String())
	case a.Query != "":
		fmt.Fprintf(&out, "No tool of yours matches %q.", a.Query)
	}
	if len(refused) > 0 {
		fmt.Fprintf(&out, "\nRefused (not one of your tools, or hidden by the owner): %s", strings.Join(refused, ", "))
	}
	for _, p := range problems {
		fmt.Fprintf(&out, "\n(%v)", p)
	}
	res := tools.Result{Output: strings.TrimSpace(out.String()), IsError: len(hits) == 0}
	if len(loaded) > 0 {
		// The declarations as sent from the next step on, with how the
		// gate treats them: a replay declares and gates the same without
		// asking the server (R-OBS-3).
		res.Meta = map[string]any{"loaded": loaded, "declared": declared}
	}
	return res, nil
}

// DeclaredTool is one MCP tool as tool_search declared it (the result's
// meta "declared"): its declaration and what the gate and the approval
// card read of it.
type DeclaredTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Params      json.RawMessage `json:"params,omitempty"`
	Server      string          `json:"server,omitempty"`
	Remote      string          `json:"remote,omitempty"`
	ReadOnly    bool            `json:"read_only,omitempty"`
	Hint        bool            `json:"read_only_hint,omitempty"`
	Approval    string          `json:"approval,omitempty"`
	About       string          `json:"about,omitempty"`
	// Ask is why its calls ask in every seat ("" when they need not).
	Ask           string `json:"ask,omitempty"`
	NeedsApproval bool   `json:"needs_approval,omitempty"`
}

func declaredOf(tool tools.Tool) DeclaredTool {
	d := tool.Def()
	out := DeclaredTool{Name: d.Name, Description: d.Description, Params: d.Params, ReadOnly: tools.ReadOnly(tool),
		Ask: tools.AskReason(tool, tools.Env{}, nil), NeedsApproval: tools.NeedsApproval(tool)}
	if rt, ok := tool.(remoteTool); ok {
		out.Server, out.Remote, out.Hint, out.Approval, out.About = rt.Server(), rt.Remote(), rt.ReadOnlyHint(), rt.Approval(), rt.About()
	}
	return out
}

// aboutTool is what a tool says of itself for a search: an MCP tool's
// server text stays fenced as data (R-SEC-1) and, as this loop tool's
// result skips the pipeline's cleaning, is unframed and redacted here.
func aboutTool(r *events.Redactor, tool tools.Tool) string {
	if rt, ok := tool.(remoteTool); ok {
		return Unframe(r.String(rt.About()))
	}
	return oneLineText(tool.Def().Description, 300)
}

// searchText is what a search reads of a tool: an MCP tool's server text
// inside its fence lines, not the harness's words around it.
func searchText(tool tools.Tool) string {
	rt, ok := tool.(remoteTool)
	if !ok {
		return tool.Def().Description
	}
	lines := strings.Split(rt.About(), "\n")
	if len(lines) < 2 {
		return rt.About()
	}
	return rt.Remote() + " " + strings.Join(lines[1:len(lines)-1], " ")
}

// searchTools ranks tools by how many of the query's words their name or
// description holds; the best maxSearchHits with at least one.
func searchTools(all []tools.Tool, query string) []tools.Tool {
	words := strings.Fields(strings.ToLower(query))
	type hit struct {
		t     tools.Tool
		score int
	}
	var hits []hit
	for _, tool := range all {
		d := tool.Def()
		name := strings.ToLower(d.Name)
		hay := name + " " + strings.ToLower(searchText(tool))
		score := 0
		for _, w := range words {
			switch {
			case strings.HasSuffix(name, "__"+w) || name == w:
				score += 10
			case strings.Contains(name, w):
				score += 3
			case strings.Contains(hay, w):
				score++
			}
		}
		if score > 0 {
			hits = append(hits, hit{tool, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return cmp.Compare(b.score, a.score) })
	var out []tools.Tool
	for i, h := range hits {
		if i == maxSearchHits {
			break
		}
		out = append(out, h.t)
	}
	return out
}

func oneLineText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// mcpTools are the offered tools of the agent's MCP servers.
func (t *Turn) mcpTools(ctx context.Context) ([]tools.Tool, []error) {
	if t.deps.Services.MCP == nil || len(t.agent.MCP) == 0 {
		return nil, nil
	}
	return t.deps.Services.MCP.Tools(ctx, t.agent.MCP)
}

// loadedTools are the MCP tools this conversation loaded with
// tool_search (State.Loaded) that its servers still offer.
func (t *Turn) loadedTools(ctx context.Context) []tools.Tool {
	var loaded []string
	t.conv.View(func(st *State) { loaded = slices.Clone(st.Loaded) })
	if len(loaded) == 0 {
		return nil
	}
	all, _ := t.mcpTools(ctx)
	var out []tools.Tool
	for _, tool := range all {
		if slices.Contains(loaded, tool.Def().Name) {
			out = append(out, tool)
		}
	}
	return out
}

// isLoaded says whether this conversation loaded name.
func (t *Turn) isLoaded(name string) bool {
	var ok bool
	t.conv.View(func(st *State) { ok = slices.Contains(st.Loaded, name) })
	return ok
}

// MCPLoaded is the fold of the MCP tools tool_search declared in this
// conversation, in the order found, from its results' meta (R-MCP): they
// are declared to the model from the next call on, after a restart too.
type MCPLoaded struct {
	Loaded []string `json:"loaded,omitempty"`
}

func (f *MCPLoaded) apply(env events.Envelope, _ foldOn) {
	if e, ok := decoded(env).(*events.ToolCompleted); ok && e.Tool == ToolSearchTool {
		f.load(e.Meta["loaded"])
	}
}

// load adds the names of a tool_search result's meta to Loaded.
func (f *MCPLoaded) load(v any) {
	var names []any
	switch v := v.(type) {
	case []any:
		names = v
	case []string:
		for _, n := range v {
			names = append(names, n)
		}
	}
	for _, n := range names {
		if name, ok := n.(string); ok && !slices.Contains(f.Loaded, name) {
			f.Loaded = append(f.Loaded, name)
		}
	}
}
