package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Prefix starts the name of every MCP tool: mcp__<server>__<tool>.
const Prefix = "mcp__"

// maxName is the longest function name the model APIs take
// (^[a-zA-Z0-9_-]{1,64}$).
const maxName = 64

// ToolName is the registered name of a server's tool: mcp__<server>__<tool>
// with every character outside [A-Za-z0-9_-] written as _, and a name past
// 64 characters cut and ended with a hash of the whole, so that two long
// names stay apart.
func ToolName(server, tool string) string {
	n := Prefix + clean(server) + "__" + clean(tool)
	if len(n) <= maxName {
		return n
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	h := hex.EncodeToString(sum[:4])
	return n[:maxName-len(h)-1] + "_" + h
}

func clean(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// ServerOf is the server part of an MCP tool name, as config names it
// (server names are kept to [A-Za-z0-9-] words joined by single _, so they
// survive ToolName unchanged).
func ServerOf(name string) (server string, ok bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return "", false
	}
	server, _, ok = strings.Cut(rest, "__")
	return server, ok && server != ""
}

// Collision is two tools whose registered names are the same after
// normalisation: neither is offered.
type Collision struct {
	Name          string
	First, Second string // "server/tool"
}

func (c Collision) Error() string {
	return fmt.Sprintf("MCP tools %s and %s both become %s after normalisation: neither is offered (rename one on its server, or hide one with hidden_tools)", c.First, c.Second, c.Name)
}
