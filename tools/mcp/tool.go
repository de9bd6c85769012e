package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

// Tool is one tool of an MCP server, as the registry and the gate see it.
// It needs approval unless the owner listed it in read_only_tools: the
// server's own readOnlyHint is shown, never taken as authority (R-GATE-5).
//
// Everything the server says of a tool is data from outside (R-SEC-1):
// its description, title and the descriptions and titles of its input
// schema are cut to a length, cleaned of fence-like text and fenced with
// a nonce drawn when the tool was listed (stable, so the declarations do
// not change from one model call to the next); the schema the model is
// given keeps only its structure.
type Tool struct {
	srv      *server
	name     string // mcp__<server>__<tool>
	remote   string // the server's name for it
	about    string // what the server says of it, fenced
	params   json.RawMessage
	readOnly bool // the owner's word
	hint     bool // the server's word
}

var (
	_ tools.Tool  = (*Tool)(nil)
	_ tools.Gated = (*Tool)(nil)
	_ tools.Asker = (*Tool)(nil)
)

// askReason is the approval card's line for an MCP tool that asks in
// every seat.
const askReason = "an MCP tool that may change things: the owner approves each call, in every conversation (the server is not set to autonomous: run)"

// Caps on what a server may say of one tool (runes).
const (
	maxDescription = 2000
	maxTitle       = 200
	maxParamDoc    = 300
	maxAbout       = 4000
	maxSchema      = 16 << 10 // bytes of the structure-only schema
)

func (s *server) tool(t *sdk.Tool) *Tool {
	raw, err := json.Marshal(t.InputSchema)
	var schema any
	if err == nil {
		err = json.Unmarshal(raw, &schema)
	}
	obj, isObj := schema.(map[string]any)
	if err != nil || !isObj {
		obj = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	var docs []string
	bare := structure(obj, "", &docs).(map[string]any)
	params, err := json.Marshal(bare)
	if err != nil || len(params) > maxSchema {
		params = json.RawMessage(`{"type":"object"}`)
		docs = append(docs, "(its input schema was too large to declare; its parameters are not listed)")
	}
	hint := t.Annotations != nil && t.Annotations.ReadOnlyHint
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	var b strings.Builder
	if title = Clean(title, maxTitle); title != "" {
		b.WriteString("Title: " + strings.Join(strings.Fields(title), " ") + "\n")
	}
	b.WriteString(Clean(strings.TrimSpace(t.Description), maxDescription))
	if len(docs) > 0 {
		b.WriteString("\nParameters:\n" + strings.Join(docs, "\n"))
	}
	name := ToolName(s.cfg.Name, t.Name)
	about := fence.Wrap("mcp:"+s.cfg.Name+"/"+name+" (what its server says of it)", Clean(b.String(), maxAbout))
	return &Tool{srv: s, name: name, remote: t.Name, about: about, params: params,
		readOnly: slices.Contains(s.cfg.ReadOnly, t.Name), hint: hint}
}

// structure is a JSON schema with only its structure: descriptions,
// titles, examples and comments go (docs collects the descriptions and
// titles, cleaned and cut, by the property's path); every other string is
// cleaned and cut too.
func structure(v any, path string, docs *[]string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			switch k {
			case "description", "title":
				if s, ok := x.(string); ok && path != "" && strings.TrimSpace(s) != "" {
					*docs = append(*docs, "- "+path+" ("+k+"): "+strings.Join(strings.Fields(Clean(s, maxParamDoc)), " "))
				}
			case "examples", "$comment":
			case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
				m, ok := x.(map[string]any)
				if !ok {
					continue
				}
				props := make(map[string]any, len(m))
				for name, sub := range m {
					name = Clean(name, 64)
					props[name] = structure(sub, strings.TrimPrefix(path+"."+name, "."), docs)
				}
				out[k] = props
			default:
				out[k] = structure(x, path, docs)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = structure(x, path, docs)
		}
		return out
	case string:
		return Clean(v, maxParamDoc)
	}
	return v
}

// fenceLike are the brackets a fence line is made of.
var fenceLike = strings.NewReplacer("<<<", "<< <", ">>>", "> >>")

// Clean makes text from an MCP server safe to show between fence lines:
// control and invisible format characters go (newlines and tabs stay),
// runs of three angle brackets are broken, so that no fence line can be
// written or closed from inside, and it is cut to at most n runes.
func Clean(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	s = unfenced(s)
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// unfenced breaks every run of three angle brackets, so that no fence
// line can be written from inside a fence.
func unfenced(s string) string {
	for strings.Contains(s, "<<<") || strings.Contains(s, ">>>") {
		s = fenceLike.Replace(s)
	}
	return s
}

// Def declares the tool: where it is from and whether it asks, then what
// its server says of it, fenced as data.
func (t *Tool) Def() tools.Def {
	return tools.Def{Name: t.name, Description: t.Origin() + "\n" + t.about, Params: t.params}
}

// Origin is the harness's line about the tool: its server, its name there
// and whether it asks, with the rule for reading the fenced text.
func (t *Tool) Origin() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Tool %q of the MCP server %q.", Clean(t.remote, 100), t.srv.cfg.Name)
	b.WriteString(" " + t.Approval() + ".")
	b.WriteString(" What its server says of it follows. " + fence.Rule)
	return b.String()
}

// About is what the server says of the tool, fenced as data.
func (t *Tool) About() string { return t.about }

// NeedsApproval: every MCP tool asks unless the owner marked it read-only.
func (t *Tool) NeedsApproval() bool { return !t.readOnly }

// AskWhen: a tool that is not read-only asks in every seat — autonomous
// ones too — unless its server is set to autonomous: run (R-GATE-5).
func (t *Tool) AskWhen(tools.Env, json.RawMessage) string {
	if t.readOnly || t.srv.cfg.AutonomousRun {
		return ""
	}
	return askReason
}

// Approval is what the model and tool_search are told of how the tool is
// gated, in the gate's own terms.
func (t *Tool) Approval() string {
	switch {
	case t.readOnly:
		return "It only reads: it runs without asking"
	case t.srv.cfg.AutonomousRun:
		return "It may change things: it asks the owner in a supervised conversation and runs unasked in an autonomous one"
	}
	return "It may change things: the owner approves each call, in every conversation"
}

// Server, Remote, ReadOnly and ReadOnlyHint describe the tool for the
// approval card, tool_search and crew doctor.
func (t *Tool) Server() string     { return t.srv.cfg.Name }
func (t *Tool) Remote() string     { return t.remote }
func (t *Tool) ReadOnly() bool     { return t.readOnly }
func (t *Tool) ReadOnlyHint() bool { return t.hint }

// Run calls the tool on its server. Arguments are always an object: a
// missing or null one is sent as {} (servers refuse null).
func (t *Tool) Run(ctx context.Context, env tools.Env, raw json.RawMessage) (tools.Result, error) {
	args := map[string]any{}
	if s := strings.TrimSpace(string(raw)); s != "" && s != "null" {
		if err := json.Unmarshal(raw, &args); err != nil || args == nil {
			return tools.Failf("Not run: the arguments of %s must be a JSON object, got %s", t.name, short(string(raw))), nil
		}
	}
	return t.srv.call(ctx, t.remote, args)
}

// convert is the model's view of a result: the text parts fenced as data
// from outside, images as image parts, structured content as JSON (and in
// Meta).
func convert(server, remote string, res *sdk.CallToolResult) tools.Result {
	var text []string
	var out tools.Result
	images := 0
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			text = append(text, c.Text)
		case *sdk.ImageContent:
			images++
			out.Parts = append(out.Parts, tools.ImagePart(c.MIMEType, c.Data))
			text = append(text, fmt.Sprintf("[image %d: %s, %d bytes, attached]", images, c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			text = append(text, fmt.Sprintf("[audio: %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			text = append(text, fmt.Sprintf("[resource link: %s %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil && r.Text != "" {
				text = append(text, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			} else if r != nil {
				text = append(text, fmt.Sprintf("[resource %s: %s, %d bytes, not shown]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			b, _ := json.Marshal(c)
			text = append(text, string(b))
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			text = append(text, "structured content: "+string(b))
			out.Meta = map[string]any{"structured_content": json.RawMessage(b)}
		}
	}
	body := strings.Join(text, "\n")
	if body == "" {
		body = "(no content)"
	}
	out.Output = fence.Wrap("mcp:"+server+"/"+Clean(remote, 100), unfenced(body))
	if res.IsError {
		out.IsError = true
		out.Output = "The MCP tool reported an error:\n" + out.Output
	}
	return out
}

func short(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// Example is how a tool of a server declared as cfg is gated and declared,
// for the gate table (loop.GateTable) and tests; it is never called.
func Example(cfg Server, t *sdk.Tool) *Tool {
	return (&server{cfg: cfg}).tool(t)
}
