package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

// Seed 004: todo_write replaces the session's checklist whole; its items
// travel as the result's meta for the run card; bad items are refused.
func TestTodoWriteChecklist(t *testing.T) {
	res, err := NewFunc[todoWriteArgs](TodoWrite{}).Run(t.Context(), Env{}, json.RawMessage(`{"items":[{"text":"read","done":true},{"text":"write","done":false}]}`))
	if err != nil || res.IsError || !strings.HasPrefix(res.Output, "Checklist: 1 of 2 done.") || !strings.Contains(res.Output, "[x] read\n[ ] write") {
		t.Fatalf("%+v %v", res, err)
	}
	if items, _ := res.Meta["todo"].([]TodoItem); len(items) != 2 || !items[0].Done {
		t.Fatalf("meta = %+v", res.Meta)
	}
	for _, bad := range []string{`{"items":[{"text":" ","done":false}]}`, `{"items":[{"text":"x"}],"extra":1}`, `{}`} {
		if res, _ := (NewFunc[todoWriteArgs](TodoWrite{})).Run(t.Context(), Env{}, json.RawMessage(bad)); !res.IsError && bad != `{}` {
			t.Errorf("%s accepted: %+v", bad, res)
		}
	}
}
