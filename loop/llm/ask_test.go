package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/loop/llm"
)

// answer is a model that replies text, or fails with err.
type answer struct {
	text string
	err  error
}

func (a answer) Call(context.Context, llm.Request) (llm.Reply, error) {
	if a.err != nil {
		return llm.Reply{}, a.err
	}
	cost := 0.002
	return llm.Reply{Text: a.text, CostUSD: &cost}, nil
}

// Ask takes the first route that answers something; failing and empty
// routes pass to the next and are reported; none answering is an error
// naming each route.
func TestAskFallsThroughToTheFirstAnswer(t *testing.T) {
	models := map[string]llm.Model{
		"fake:broken": answer{err: errors.New("boom\nstack")},
		"fake:empty":  answer{text: "  "},
		"fake:good":   answer{text: "the answer"},
	}
	get := llm.ModelsFunc(func(r string) (llm.Model, error) {
		if m, ok := models[r]; ok {
			return m, nil
		}
		return nil, errors.New("unknown route")
	})
	var failed []string
	msgs := ask("q")
	a, err := llm.Ask(t.Context(), get, []string{"fake:missing", "fake:broken", "fake:empty", "fake:good"}, msgs,
		func(r string, err error) { failed = append(failed, r) })
	if err != nil || a.Text != "the answer" || a.Route != "fake:good" || a.CostUSD == nil || *a.CostUSD != 0.002 {
		t.Fatalf("Ask = %+v %v", a, err)
	}
	if strings.Join(failed, ",") != "fake:missing,fake:broken,fake:empty" {
		t.Errorf("reported failures %v", failed)
	}
	_, err = llm.Ask(t.Context(), get, []string{"fake:broken", "fake:empty"}, msgs, nil)
	if err == nil || !strings.Contains(err.Error(), "fake:broken: boom;") || !strings.Contains(err.Error(), "fake:empty: empty reply") {
		t.Errorf("all failing = %v", err)
	}
	if _, err := llm.Ask(t.Context(), get, nil, msgs, nil); err == nil || !strings.Contains(err.Error(), "no routes") {
		t.Errorf("no routes = %v", err)
	}
}
