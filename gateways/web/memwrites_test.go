package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections"
	"go.etcd.io/bbolt"
)

// R-X-7: the memory page shows the memory, fact and wiki writes made after
// their run read untrusted content, with the run that made them; a
// trusted write is not listed there.
func TestMemoryPageShowsWritesFromUntrustedContent(t *testing.T) {
	ctx := t.Context()
	_, log := eventstest.Start(t)
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "p.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	runner, err := projections.Open(ctx, log, db, nil, projections.All()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close(context.Background()) })
	prov := func(path, call, untrusted string) map[string]any {
		p := map[string]any{"path": path, "run_id": "r1", "call_id": call}
		if untrusted != "" {
			p["untrusted"] = untrusted
		}
		return map[string]any{"provenance": p}
	}
	stored, err := log.Append(ctx, events.Conv("c1"), 0,
		events.MustNew(&events.ConversationOpened{Agent: "pong", Channel: "web"}),
		events.MustNew(&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "k1", Tool: "memory_save", Output: "saved", Meta: prov("memory/2026-12-01.md", "k1", "")}),
		events.MustNew(&events.ToolCompleted{RunID: "r1", Step: 2, CallID: "k2", Tool: "wiki_apply", Output: "appended", Meta: prov("wiki/shop.md", "k2", "fetch_url")}),
		// A gated script's memory write (R-SCR): kept with its nested_call.
		events.MustNew(&events.NestedCall{RunID: "r1", Step: 3, CallID: "k3", N: 2, Kind: "tool", Tool: "memory_save", Chars: 5,
			Provenance: prov("memory/2026-12-02.md", "k3.2", "fetch_url (in a script)")["provenance"].(map[string]any)}))
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.WaitFor(ctx, stored[len(stored)-1].Seq); err != nil {
		t.Fatal(err)
	}
	writes, err := projections.ListMemoryWrites(db, "", false, 10)
	if err != nil || len(writes) != 3 || writes[0].CallID != "k3.2" || writes[0].Tool != "memory_save" || writes[1].Untrusted != "fetch_url" || writes[1].Agent != "pong" || writes[2].CallID != "k1" {
		t.Fatalf("writes = %+v, %v", writes, err)
	}
	srv := httptest.NewServer(web.New(web.Config{
		Log: log, Views: fakeViews{}, Health: func(context.Context) (bool, any) { return true, nil },
		Memory: newFakeMemory(),
		Pages:  &web.Pages{DB: db, Location: time.UTC, Clock: time.Now},
	}))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/memory")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if n := strings.Count(page, `data-testid="memory-untrusted-write"`); n != 2 ||
		!strings.Contains(page, "wiki/shop.md") || !strings.Contains(page, "after fetch_url") || !strings.Contains(page, `href="/c/c1/runs"`) {
		t.Errorf("memory page shows %d untrusted writes:\n%s", n, page)
	}
	if strings.Contains(page, "memory/2026-12-01.md") {
		t.Errorf("a trusted write is listed as untrusted")
	}
}
