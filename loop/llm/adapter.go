package llm

import (
	"context"
	"encoding/json"

	"github.com/tmc/langchaingo/llms"
)

// The one place where langchaingo meets the harness: our OpenAI-compatible
// client and the fakes are llms.Models inside this package, and the rest of
// the harness calls them as a Model. Every reading of a reply's
// GenerationInfo happens in replyOf.

// FromLangchain is m behind the Model boundary.
func FromLangchain(m llms.Model) Model { return lcModel{m} }

// generator is the half of llms.Model the harness uses (the fakes have no
// other).
type generator interface {
	GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error)
}

type lcModel struct{ m generator }

// Call sends req through the langchaingo model.
func (a lcModel) Call(ctx context.Context, req Request) (Reply, error) {
	resp, err := a.m.GenerateContent(ctx, lcMessages(req.Messages), lcOptions(req)...)
	return replyOf(resp), err
}

func lcOptions(req Request) []llms.CallOption {
	var opts []llms.CallOption
	if req.OnDelta != nil {
		opts = append(opts, WithDeltas(req.OnDelta))
	}
	if req.MaxTokens > 0 {
		opts = append(opts, llms.WithMaxTokens(req.MaxTokens))
	}
	if req.CacheBreakpoint > 0 {
		opts = append(opts, WithCacheBreakpoint(req.CacheBreakpoint))
	}
	if len(req.Tools) > 0 {
		opts = append(opts, llms.WithTools(lcTools(req.Tools)))
	}
	return opts
}

func lcTools(ts []Tool) []llms.Tool {
	out := make([]llms.Tool, len(ts))
	for i, t := range ts {
		f := &llms.FunctionDefinition{Name: t.Name, Description: t.Description}
		if len(t.Parameters) > 0 {
			f.Parameters = json.RawMessage(t.Parameters)
		}
		out[i] = llms.Tool{Type: "function", Function: f}
	}
	return out
}

var lcRoles = map[Role]llms.ChatMessageType{
	RoleSystem: llms.ChatMessageTypeSystem, RoleUser: llms.ChatMessageTypeHuman,
	RoleAssistant: llms.ChatMessageTypeAI, RoleTool: llms.ChatMessageTypeTool,
}

func lcMessages(msgs []Message) []llms.MessageContent {
	out := make([]llms.MessageContent, len(msgs))
	for i, m := range msgs {
		mc := llms.MessageContent{Role: lcRoles[m.Role]}
		if m.Role == RoleTool {
			mc.Parts = []llms.ContentPart{llms.ToolCallResponse{ToolCallID: m.ToolCallID, Name: m.ToolName, Content: m.Text()}}
			out[i] = mc
			continue
		}
		if n := len(m.Parts) + len(m.ToolCalls); n > 0 {
			mc.Parts = make([]llms.ContentPart, 0, n)
		}
		for _, p := range m.Parts {
			if p.ImageURL != "" {
				mc.Parts = append(mc.Parts, llms.ImageURLContent{URL: p.ImageURL})
			} else {
				mc.Parts = append(mc.Parts, llms.TextContent{Text: p.Text})
			}
		}
		for _, c := range m.ToolCalls {
			mc.Parts = append(mc.Parts, llms.ToolCall{ID: c.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
		out[i] = mc
	}
	return out
}

// replyOf reads the langchaingo reply: the provider's quirks (usage
// reported or not, cost billed or priced, a reasoning field) were settled
// by stream.go's accumulator into GenerationInfo, and this is the only
// reader of that map.
func replyOf(resp *llms.ContentResponse) Reply {
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return Reply{}
	}
	ch := resp.Choices[0]
	r := Reply{Text: ch.Content, Reasoning: ch.ReasoningContent, Finish: Finish(ch.StopReason)}
	for _, tc := range ch.ToolCalls {
		if tc.FunctionCall == nil {
			continue
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: tc.ID, Name: tc.FunctionCall.Name, Arguments: tc.FunctionCall.Arguments})
	}
	gi := ch.GenerationInfo
	if c, ok := gi[infoCost].(float64); ok {
		r.CostUSD = &c
	}
	if v, ok := gi[infoCacheSaved].(float64); ok {
		r.Usage.CacheSavedUSD = &v
	}
	r.Usage.Input, r.Usage.Output = intOf(gi[infoInput]), intOf(gi[infoOutput])
	r.Usage.CachedInput, r.Usage.CacheWrite = intOf(gi[infoCached]), intOf(gi[infoCacheWrite])
	r.Usage.Reasoning = intOf(gi[infoReasoning])
	r.Model, _ = gi[infoModel].(string)
	r.RequestID, _ = gi[infoRequestID].(string)
	return r
}

// The GenerationInfo keys the accumulator writes.
const (
	infoInput      = "PromptTokens"
	infoOutput     = "CompletionTokens"
	infoTotal      = "TotalTokens"
	infoCached     = "CachedInputTokens"
	infoCacheWrite = "CacheWriteTokens"
	infoCacheSaved = "CacheSavedUSD"
	infoReasoning  = "ReasoningTokens"
	infoCost       = "CostUSD"
	infoModel      = "Model"
	infoRequestID  = "RequestID"
)

// intOf reads a token count from GenerationInfo, whatever number type the
// provider put there.
func intOf(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}
