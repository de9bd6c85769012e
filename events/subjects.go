package events

import (
	"fmt"
	"regexp"
	"strings"
)

// Root is the subject prefix of every stored event.
const Root = "crew"

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// ValidID reports whether id can be used as one subject token and in a URL
// path: letters, digits, '_' and '-', at most 128 characters.
func ValidID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%w %q: want 1-128 of [A-Za-z0-9_-], starting with a letter or digit", ErrInvalidID, id)
	}
	return nil
}

// Scope is the subject prefix that one single writer owns, such as
// "crew.conv.c1". Events of the scope are stored on "<scope>.<type>".
type Scope string

// Conv is the scope of one conversation.
func Conv(id string) Scope { return Scope(Root + ".conv." + id) }

// Job is the scope of one scheduled job.
func Job(id string) Scope { return Scope(Root + ".job." + id) }

// Telegram is the scope of one bot's polling state.
func Telegram(bot string) Scope { return Scope(Root + ".tg." + bot) }

// MCP is the scope of one MCP server's process (its restarts).
func MCP(server string) Scope { return Scope(Root + ".mcp." + server) }

// Agent is the scope of one agent's memory proposals.
func Agent(id string) Scope { return Scope(Root + ".agent." + id) }

// ClusterScope is the scope of what happened to the log's own stream on a
// cluster (its replicas raised).
const ClusterScope = Scope(Root + ".cluster.stream")

// Canvas is the scope of one canvas artifact.
func Canvas(id string) Scope { return Scope(Root + ".canvas." + id) }

// Filter is the subject filter matching every event of the scope.
func (s Scope) Filter() string { return string(s) + ".>" }

// Subject is the subject an event of type typ is stored on.
func (s Scope) Subject(typ string) string { return string(s) + "." + typ }

// ID returns the scope's id (the token after the kind), e.g. "c1".
func (s Scope) ID() string {
	_, rest, ok := strings.Cut(string(s), ".")
	if !ok {
		return ""
	}
	_, id, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	return id
}

// Kind returns the scope's kind ("conv", "job", "canvas").
func (s Scope) Kind() string {
	_, rest, ok := strings.Cut(string(s), ".")
	if !ok {
		return ""
	}
	kind, _, _ := strings.Cut(rest, ".")
	return kind
}

// ScopeOf returns the scope of a stored event's subject
// ("crew.conv.c1.message_received" → "crew.conv.c1").
func ScopeOf(subject string) Scope {
	i := strings.LastIndexByte(subject, '.')
	if i < 0 {
		return Scope(subject)
	}
	return Scope(subject[:i])
}
