package llm

import (
	"context"

	"github.com/tmc/langchaingo/llms"
)

// The internals the package's tests drive directly.

// Langchain is the langchaingo model behind r, before the boundary: a
// *Client (an llms.Model) or a fake.
func (p *Providers) Langchain(r Route) (interface {
	GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error)
}, error) {
	return p.langchain(r)
}

// CallSleeping is Call waiting between retries with sleep.
var CallSleeping = callRetrying

// ReplyOf is the typed reply of a langchaingo response.
var ReplyOf = replyOf
