package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
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

// tool is how t is declared and gated; an error (a property name that is
// not an identifier) says why it is not offered at all.
func (s *server) tool(t *sdk.Tool) (*Tool, error) {
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
	var bad string
	bare := structure(obj, "", &docs, &bad).(map[string]any)
	if bad != "" {
		if r := []rune(bad); len(r) > 80 {
			bad = string(r[:80]) + "…"
		}
		return nil, fmt.Errorf("MCP tool %q of server %q is not offered: its input schema names a property %q, which is not an identifier (letters, digits, _ - and ., at most 64, not starting with a digit)", Clean(t.Name, 64), s.cfg.Name, bad)
	}
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
		readOnly: slices.Contains(s.cfg.ReadOnly, t.Name), hint: hint}, nil
}

// structure is a JSON schema reduced to what the model needs to call the
// tool: types, properties, required, items and the combinators and bounds
// of those. Everything the server wrote in words — descriptions, titles,
// enum, const, default and example values — leaves the schema for docs,
// by the property's path, cleaned and cut, values JSON-quoted, and is read
// fenced; every other key goes. bad gets the first property name that is
// not an identifier.
func structure(v any, path string, docs *[]string, bad *string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			switch k {
			case "description", "title":
				if s, ok := x.(string); ok && path != "" && strings.TrimSpace(s) != "" {
					*docs = append(*docs, "- "+path+" ("+k+"): "+strings.Join(strings.Fields(Clean(s, maxParamDoc)), " "))
				}
			case "enum", "const", "default", "examples":
				if path != "" {
					*docs = append(*docs, "- "+path+" ("+k+"): "+quoted(x))
				}
			case "properties":
				m, ok := x.(map[string]any)
				if !ok {
					continue
				}
				props := make(map[string]any, len(m))
				for name, sub := range m {
					if !identifier.MatchString(name) {
						if *bad == "" {
							*bad = name
						}
						continue
					}
					props[name] = structure(sub, strings.TrimPrefix(path+"."+name, "."), docs, bad)
				}
				out[k] = props
			case "required":
				names, _ := x.([]any)
				var req []any
				for _, n := range names {
					if s, ok := n.(string); ok && identifier.MatchString(s) {
						req = append(req, s)
					}
				}
				if len(req) > 0 {
					out[k] = req
				}
			case "type":
				switch t := x.(type) {
				case string:
					if jsonTypes[t] {
						out[k] = t
					}
				case []any:
					var ts []any
					for _, e := range t {
						if s, ok := e.(string); ok && jsonTypes[s] {
							ts = append(ts, s)
						}
					}
					out[k] = ts
				}
			case "items", "additionalProperties", "anyOf", "oneOf", "allOf", "prefixItems", "not":
				if b, ok := x.(bool); ok {
					out[k] = b
					continue
				}
				out[k] = structure(x, path, docs, bad)
			case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "minLength", "maxLength", "multipleOf", "uniqueItems":
				switch x.(type) {
				case float64, bool:
					out[k] = x
				}
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(v))
		for _, x := range v {
			if m, ok := x.(map[string]any); ok {
				out = append(out, structure(m, path, docs, bad))
			}
		}
		return out
	}
	return map[string]any{}
}

// identifier is what a property name must be to be declared.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

var jsonTypes = map[string]bool{"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true, "null": true}

// quoted is a schema value as the docs show it: JSON, cleaned and cut like
// a description.
func quoted(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return "(not shown)"
	}
	return strings.Join(strings.Fields(Clean(b.String(), maxParamDoc)), " ")
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
	tool, err := (&server{cfg: cfg}).tool(t)
	if err != nil {
		panic("mcp.Example: " + err.Error())
	}
	return tool
}
