package llm

import "encoding/json"

// ImageTokens is what one image part is counted as: a 1568 px image is
// about 1,600 tokens at the providers that publish a rule.
const ImageTokens = 1600

// EstimateTokens is the harness's one measure of a request: the messages
// and the tool declarations sent with them, a token per three bytes of
// text (conservative for Vietnamese, where chars/4 undercounts by a
// quarter), a little per message and per tool call, and ImageTokens per
// image. Compaction decides on it and the budget reserves on it; where a
// provider reports the prompt's real size, Calibrate scales it.
func EstimateTokens(msgs []Message, tools []Tool) int {
	return EstimateWith(msgs, ToolsBytes(tools))
}

// ToolsBytes is the size of the tool declarations as sent: their JSON. A
// turn measures its declarations once while they stay the same
// (EstimateWith), since marshalling fifty schemas at every measure was
// half of a tool step's CPU.
func ToolsBytes(tools []Tool) int {
	if len(tools) == 0 {
		return 0
	}
	b, _ := json.Marshal(lcTools(tools))
	return len(b)
}

// EstimateWith is EstimateTokens of msgs with declarations of toolsBytes
// (ToolsBytes).
func EstimateWith(msgs []Message, toolsBytes int) int {
	n := toolsBytes
	images := 0
	for _, m := range msgs {
		n += 16
		for _, p := range m.Parts {
			if p.ImageURL != "" {
				images++
				continue
			}
			n += len(p.Text)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments) + len(c.ID) + 16
		}
		n += len(m.ToolCallID)
	}
	return TokensOfBytes(n) + images*ImageTokens
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
