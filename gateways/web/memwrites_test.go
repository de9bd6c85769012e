package web_test

import (
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections"
)

// R-X-7: the memory page shows the memory, fact and wiki writes made after
// their run read untrusted content, with the run that made them; a
// trusted write is not listed there.
func TestMemoryPageShowsWritesFromUntrustedContent(t *testing.T) {
	h := newHarness(t)
	prov := func(path, call, untrusted string) map[string]any {
		p := map[string]any{"path": path, "run_id": "r1", "call_id": call}
		if untrusted != "" {
			p["untrusted"] = untrusted
		}
		return map[string]any{"provenance": p}
	}
	h.add(t, "c1",
		&events.ConversationOpened{Agent: "pong", Channel: "web"},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "k1", Tool: "memory_save", Output: "saved", Meta: prov("memory/2026-12-01.md", "k1", "")},
		&events.ToolCompleted{RunID: "r1", Step: 2, CallID: "k2", Tool: "wiki_apply", Output: "appended", Meta: prov("wiki/shop.md", "k2", "fetch_url")},
		// A gated script's memory write (R-SCR): kept with its nested_call.
		&events.NestedCall{RunID: "r1", Step: 3, CallID: "k3", N: 2, Kind: "tool", Tool: "memory_save", Chars: 5,
			Provenance: prov("memory/2026-12-02.md", "k3.2", "fetch_url (in a script)")["provenance"].(map[string]any)})
	writes, err := projections.ListMemoryWrites(h.db, "", false, 10)
	if err != nil || len(writes) != 3 || writes[0].CallID != "k3.2" || writes[0].Tool != "memory_save" || writes[1].Untrusted != "fetch_url" || writes[1].Agent != "pong" || writes[2].CallID != "k1" {
		t.Fatalf("writes = %+v, %v", writes, err)
	}
	url := h.serve(t, web.Config{Memory: newFakeMemory(), Pages: h.pages()})
	page := getBody(t, url+"/memory")
	if n := strings.Count(page, `data-testid="memory-untrusted-write"`); n != 2 ||
		!strings.Contains(page, "wiki/shop.md") || !strings.Contains(page, "after fetch_url") || !strings.Contains(page, `href="/c/c1/runs"`) {
		t.Errorf("memory page shows %d untrusted writes:\n%s", n, page)
	}
	if strings.Contains(page, "memory/2026-12-01.md") {
		t.Errorf("a trusted write is listed as untrusted")
	}
}
