package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/tmc/langchaingo/llms"
)

// answer is a model that replies text, or fails with err.
type answer struct {
	text string
	err  error
}

func (a answer) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	if a.err != nil {
		return nil, a.err
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: a.text, GenerationInfo: map[string]any{"CostUSD": 0.002}}}}, nil
}

func (a answer) Call(ctx context.Context, prompt string, _ ...llms.CallOption) (string, error) {
	return a.text, a.err
}

// Ask takes the first route that answers something; failing and empty
// routes pass to the next and are reported; none answering is an error
// naming each route.
func TestAskFallsThroughToTheFirstAnswer(t *testing.T) {
	models := map[string]llms.Model{
		"fake:broken": answer{err: errors.New("boom\nstack")},
		"fake:empty":  answer{text: "  "},
		"fake:good":   answer{text: "the answer"},
	}
	get := func(r string) (llms.Model, error) {
		if m, ok := models[r]; ok {
			return m, nil
		}
		return nil, errors.New("unknown route")
	}
	var failed []string
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "q")}
	text, route, cost, err := llm.Ask(t.Context(), get, []string{"fake:missing", "fake:broken", "fake:empty", "fake:good"}, msgs,
		func(r string, err error) { failed = append(failed, r) })
	if err != nil || text != "the answer" || route != "fake:good" || cost == nil || *cost != 0.002 {
		t.Fatalf("Ask = %q %q %v %v", text, route, cost, err)
	}
	if strings.Join(failed, ",") != "fake:missing,fake:broken,fake:empty" {
		t.Errorf("reported failures %v", failed)
	}
	_, _, _, err = llm.Ask(t.Context(), get, []string{"fake:broken", "fake:empty"}, msgs, nil)
	if err == nil || !strings.Contains(err.Error(), "fake:broken: boom;") || !strings.Contains(err.Error(), "fake:empty: empty reply") {
		t.Errorf("all failing = %v", err)
	}
	if _, _, _, err := llm.Ask(t.Context(), get, nil, msgs, nil); err == nil || !strings.Contains(err.Error(), "no routes") {
		t.Errorf("no routes = %v", err)
	}
}
