package llm

import (
	"encoding/json"

	"github.com/tmc/langchaingo/llms"
)

// ImageTokens is what one image part is counted as: a 1568 px image is
// about 1,600 tokens at the providers that publish a rule.
const ImageTokens = 1600

// EstimateTokens is the harness's one measure of a request: the messages
// and the tool declarations sent with them, a token per three bytes of
// text (conservative for Vietnamese, where chars/4 undercounts by a
// quarter), a little per message and per tool call, and ImageTokens per
// image. Compaction decides on it and the budget reserves on it; where a
// provider reports the prompt's real size, Calibrate scales it.
func EstimateTokens(msgs []llms.MessageContent, defs []llms.Tool) int {
	return EstimateWithDefs(msgs, DefsBytes(defs))
}

// DefsBytes is the size of the tool declarations as sent: their JSON. A
// turn measures its declarations once while they stay the same
// (EstimateWithDefs), since marshalling fifty schemas at every measure
// was half of a tool step's CPU.
func DefsBytes(defs []llms.Tool) int {
	if len(defs) == 0 {
		return 0
	}
	b, _ := json.Marshal(defs)
	return len(b)
}

// EstimateWithDefs is EstimateTokens of msgs with declarations of
// defsBytes (DefsBytes).
func EstimateWithDefs(msgs []llms.MessageContent, defsBytes int) int {
	n := defsBytes
	images := 0
	for _, m := range msgs {
		n += 16
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				n += len(p.Text)
			case llms.ToolCall:
				if p.FunctionCall != nil {
					n += len(p.FunctionCall.Name) + len(p.FunctionCall.Arguments) + len(p.ID) + 16
				}
			case llms.ToolCallResponse:
				n += len(p.Content) + len(p.ToolCallID)
			case llms.ImageURLContent, llms.BinaryContent:
				images++
			}
		}
	}
	return TokensOfBytes(n) + images*ImageTokens
}

const estimateKey = "crew.estimate"

// WithEstimate carries the request's EstimateTokens, made by the caller,
// to a wrapper that would measure it again (the budget's reservation).
func WithEstimate(tokens int) llms.CallOption { return withMeta(estimateKey, tokens) }

// EstimateOf is the estimate WithEstimate put in o.
func EstimateOf(o llms.CallOptions) (int, bool) {
	n, ok := o.Metadata[estimateKey].(int)
	return n, ok
}

// TokensOfBytes is the estimate for n bytes of text.
func TokensOfBytes(n int) int { return (n + 2) / 3 }

// Calibrate scales an estimate by ratio, the provider's reported prompt
// tokens over the estimate of the same request (0: none known). The ratio
// is held within [0.5, 3] so one odd report cannot make the harness send
// twice the window or compact everything.
func Calibrate(estimate int, ratio float64) int {
	if ratio <= 0 {
		return estimate
	}
	ratio = min(max(ratio, 0.5), 3)
	return int(float64(estimate)*ratio + 0.5)
}
