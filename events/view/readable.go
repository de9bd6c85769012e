package view

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// ArgText is one string argument of a tool call given as text: a command
// or a file's content, with its real line breaks.
type ArgText struct {
	Name string
	Text string
}

// textArgs are the argument names always shown as text blocks; any other
// string argument holding a line break is too.
var textArgs = []string{"command", "content", "script", "code", "text", "patch", "old_string", "new_string"}

// ReadableArgs lays out tool arguments for a person deciding on them
// (approval cards on the web and Telegram, tool cards): the string
// arguments that are commands or texts as they are, and the rest as
// indented JSON without HTML escapes (a > stays >; the renderer escapes
// for its medium). Arguments that are not a JSON object come back
// indented, or as they are when they are not JSON at all.
func ReadableArgs(raw json.RawMessage) (rest string, texts []ArgText) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return indentJSON(raw), nil
	}
	var keys []string
	for k, v := range obj {
		var s string
		if json.Unmarshal(v, &s) != nil || (!slices.Contains(textArgs, k) && !strings.Contains(s, "\n")) {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return indentJSON(raw), nil
	}
	// The usual ones first (command before content), then by name.
	slices.SortFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(textArgs, a), slices.Index(textArgs, b)
		switch {
		case ia >= 0 && ib >= 0:
			return ia - ib
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		var s string
		json.Unmarshal(obj[k], &s)
		texts = append(texts, ArgText{Name: k, Text: s})
		delete(obj, k)
	}
	if len(obj) > 0 {
		others := map[string]any{}
		for k, v := range obj {
			others[k] = decodeNumbers(v)
		}
		rest = marshalIndent(others)
	}
	return rest, texts
}

// decodeNumbers decodes raw keeping numbers as written.
func decodeNumbers(raw json.RawMessage) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return raw
	}
	return v
}

// indentJSON indents raw JSON without escaping <, > and &; raw that is not
// JSON comes back as it is.
func indentJSON(raw json.RawMessage) string {
	if !json.Valid(raw) {
		return string(raw)
	}
	return marshalIndent(decodeNumbers(raw))
}

func marshalIndent(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// mcpPrefix starts every MCP tool's name (tools/mcp.Prefix).
const mcpPrefix = "mcp__"

// ToolSource says where a tool comes from when it is not the crew's own —
// "MCP server notes, tool search" for mcp__notes__search — so that an
// approval card names the server and the tool; "" for the crew's tools.
func ToolSource(name string) string {
	rest, ok := strings.CutPrefix(name, mcpPrefix)
	if !ok {
		return ""
	}
	server, tool, ok := strings.Cut(rest, "__")
	if !ok || server == "" || tool == "" {
		return ""
	}
	return "MCP server " + server + ", tool " + tool
}
