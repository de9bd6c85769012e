package web_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/projectionstest"
)

// BenchmarkSidebarFresh is the cost of the sidebar's wait for the
// projections (projections.Reader: the log's last sequence asked, then
// the Runner's check) on a page view of a home of 1,000 conversations:
// "wait" is the sidebar as served, "nowait" the same without a Fresh.
func BenchmarkSidebarFresh(b *testing.B) {
	log, db, runner := projectionstest.Start(b)
	var last uint64
	for i := range 1000 {
		stored, err := log.Append(b.Context(), events.Conv(fmt.Sprintf("c%d", i)), 0,
			events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}),
			events.MustNew(&events.MessageReceived{Channel: "web", Text: "hello"}))
		if err != nil {
			b.Fatal(err)
		}
		last = stored[len(stored)-1].Seq
	}
	if err := runner.WaitFor(b.Context(), last); err != nil {
		b.Fatal(err)
	}
	h := &harness{log: log, db: db, runner: runner}
	for _, fresh := range []projections.Freshness{runner, nil} {
		name := map[bool]string{true: "wait", false: "nowait"}[fresh != nil]
		b.Run(name, func(b *testing.B) {
			pages := h.pages()
			pages.Fresh = fresh
			url := h.serve(b, web.Config{Pages: pages}) + "/fragments/sidebar"
			for b.Loop() {
				resp, err := http.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("GET %s = %d", url, resp.StatusCode)
				}
			}
		})
	}
}
