package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

// Tool is one tool of an MCP server, as the registry and the gate see it.
// It needs approval unless the owner listed it in read_only_tools: the
// server's own readOnlyHint is shown, never taken as authority (R-GATE-5).
type Tool struct {
	srv      *server
	name     string // mcp__<server>__<tool>
	remote   string // the server's name for it
	desc     string
	params   json.RawMessage
	readOnly bool // the owner's word
	hint     bool // the server's word
}

var (
	_ tools.Tool  = (*Tool)(nil)
	_ tools.Gated = (*Tool)(nil)
)

func (s *server) tool(t *sdk.Tool) *Tool {
	params, err := json.Marshal(t.InputSchema)
	if err != nil || string(params) == "null" || !strings.HasPrefix(string(params), "{") {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	hint := t.Annotations != nil && t.Annotations.ReadOnlyHint
	return &Tool{srv: s, name: ToolName(s.cfg.Name, t.Name), remote: t.Name, desc: t.Description, params: params,
		readOnly: slices.Contains(s.cfg.ReadOnly, t.Name), hint: hint}
}

// Def declares the tool with the server's description, and where it is from.
func (t *Tool) Def() tools.Def {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(t.desc))
	fmt.Fprintf(&b, "\n\n(Tool %q of the MCP server %q.", t.remote, t.srv.cfg.Name)
	if t.readOnly {
		b.WriteString(" It only reads.)")
	} else {
		b.WriteString(" It may change things; the owner approves each call.)")
	}
	b.WriteString(" " + fence.Rule)
	return tools.Def{Name: t.name, Description: strings.TrimSpace(b.String()), Params: t.params}
}

// NeedsApproval: every MCP tool asks unless the owner marked it read-only.
func (t *Tool) NeedsApproval() bool { return !t.readOnly }

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
	out.Output = fence.Wrap("mcp:"+server+"/"+remote, body)
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
