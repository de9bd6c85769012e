package llm

import (
	"context"
	"strings"
)

// Model is one route's model as the harness sees it. Every provider, fake
// and wrapper (the budget's ledger, replay's recorded replies) implements
// it; langchaingo stays behind it, inside this package.
type Model interface {
	Call(ctx context.Context, req Request) (Reply, error)
}

// ModelFunc is a Model written as a function.
type ModelFunc func(ctx context.Context, req Request) (Reply, error)

// Call calls f.
func (f ModelFunc) Call(ctx context.Context, req Request) (Reply, error) { return f(ctx, req) }

// Request is one model call.
type Request struct {
	Messages []Message
	Tools    []Tool
	// Route is the route asked ("provider:model"); the wrappers that keep
	// one model per route (Ledger.Models) fill it in when empty.
	Route string
	// Purpose is why the call is made (events.Purpose…; "" a turn's step).
	Purpose string
	// Payer is whom the call is charged to.
	Payer Payer
	// MaxTokens is the reply's limit; 0 is the route's default.
	MaxTokens int
	// CacheBreakpoint is the index in Messages after which the provider's
	// prompt cache may keep the prefix (the system prompt is the other
	// breakpoint); 0 is none. A route without breakpoints ignores it.
	CacheBreakpoint int
	// Estimate is the request's Estimate, made by the caller; 0: whoever
	// needs it (the budget's reservation) measures it.
	Estimate int
	// OnDelta receives text and tool-call argument deltas in order, on
	// the calling goroutine, while the reply streams; for display only.
	// It must not block for long.
	OnDelta func(Delta)
}

// Payer is whom a call is charged to (R-X-5): the budget's ledger reserves
// it against the agent's day, the conversation's cap and its delegating
// conversations. The zero Payer counts against the crew's day only.
type Payer struct {
	Agent        string
	Conversation string
	Ancestors    []string // the delegating conversations, nearest first
	RunID        string
	Step         int
	CapUSD       float64 // the conversation's cost cap; 0: none
}

// Role is who speaks a message.
type Role string

// The roles of a request's messages.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one message of a request. A tool message carries the result
// as its text and names the call it answers.
type Message struct {
	Role       Role
	Parts      []Part     // text and images, in order; images only in a user message
	ToolCalls  []ToolCall // an assistant message's calls
	ToolCallID string     // a tool message: the call it answers
	ToolName   string     // a tool message: the tool
}

// Part is a piece of a message: text, or an image by URL (a data: URL of
// the bytes, or an address the provider fetches).
type Part struct {
	Text     string
	ImageURL string
}

// Text is a message of role with one text part.
func Text(role Role, text string) Message {
	return Message{Role: role, Parts: []Part{{Text: text}}}
}

// ToolResult is the tool message answering call id of tool with text.
func ToolResult(id, tool, text string) Message {
	return Message{Role: RoleTool, ToolCallID: id, ToolName: tool, Parts: []Part{{Text: text}}}
}

// Text is the message's text parts joined.
func (m Message) Text() string {
	if len(m.Parts) == 1 {
		return m.Parts[0].Text
	}
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Images counts the message's image parts.
func (m Message) Images() int {
	n := 0
	for _, p := range m.Parts {
		if p.ImageURL != "" {
			n++
		}
	}
	return n
}

// Tool is a tool declared to the model: name, description and the JSON
// Schema of its arguments.
type Tool struct {
	Name        string
	Description string
	Parameters  []byte // JSON
}

// ToolCall is a call the model asked for. Arguments are the JSON it wrote,
// which may be invalid: the tool refuses it.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Finish is why the model stopped.
type Finish string

// The finish reasons the loop decides on; a provider may send others.
const (
	FinishStop      Finish = "stop"
	FinishLength    Finish = "length" // cut at MaxTokens
	FinishToolCalls Finish = "tool_calls"
)

// Reply is a model's answer to one Request.
type Reply struct {
	Text      string
	Reasoning string // the model's reasoning, when the provider sends it
	ToolCalls []ToolCall
	Finish    Finish
	Usage     Usage
	// CostUSD is what the call cost: the provider's bill, else computed
	// from the catalog's price. Nil is unknown, never 0.
	CostUSD *float64
	// Model is the model the server says answered ("" when it did not say).
	Model string
	// RequestID is the provider's id of the generation ("" when none).
	RequestID string
}

// Cut reports a reply that stopped at MaxTokens without asking for tools.
func (r Reply) Cut() bool { return r.Finish == FinishLength && len(r.ToolCalls) == 0 }

// Usage is the call's tokens as the provider reported them (zero when it
// reported none).
type Usage struct {
	Input       int // prompt tokens, cached ones included
	Output      int // completion tokens, reasoning included
	CachedInput int // prompt tokens read from the provider's cache
	CacheWrite  int // prompt tokens written to it
	Reasoning   int // of Output, the reasoning tokens
	// CacheSavedUSD is what the cache saved at the catalog's price (nil:
	// nothing cached, or no price known).
	CacheSavedUSD *float64
}
