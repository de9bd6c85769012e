package web_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
)

// The chat page and its fragment render the history (Markdown included)
// after letting go of the conversation's lock: a turn appending to the
// conversation does not wait for a page being rendered.
func TestChatRendersOutsideConversationLock(t *testing.T) {
	ctx := t.Context()
	h := newHarness(t)
	convs := loop.NewConvs(h.log, nil)
	pages := h.pages()
	rendering, release := make(chan struct{}, 16), make(chan struct{})
	web.SetMarkdown(pages, func(text string) string {
		rendering <- struct{}{}
		<-release
		return web.Markdown(text)
	})
	url := h.serve(t, web.Config{Pages: pages})

	conv, err := convs.Get(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	appendNow := func(evs ...events.Event) uint64 {
		t.Helper()
		stored, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) { return evs, nil })
		if err != nil {
			t.Fatal(err)
		}
		return stored[len(stored)-1].Seq
	}
	seq := appendNow(&events.ConversationOpened{Agent: "master", Channel: "web"},
		&events.MessageReceived{Channel: "web", Text: "hello"},
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "a", Model: "m", Text: "**first** answer"},
		&events.RunFinished{RunID: "r1", Status: events.RunDone})
	if err := h.runner.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{"/c/c1", "/c/c1/fragment"} {
		var wg sync.WaitGroup
		var body string
		wg.Go(func() {
			resp, err := http.Get(url + path)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
		})
		select {
		case <-rendering:
		case <-time.After(eventstest.Wait):
			t.Fatalf("GET %s never rendered Markdown", path)
		}
		// The render is stuck in Markdown; an append must still go through.
		appended := make(chan error, 1)
		go func() {
			_, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
				return []events.Event{&events.MessageReceived{Channel: "web", Text: "while rendering " + path}}, nil
			})
			appended <- err
		}()
		select {
		case err := <-appended:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			close(release) // let the render finish so the append can
			<-appended
			wg.Wait()
			t.Fatalf("GET %s: an append waited for the page to render: the page renders under the conversation's lock", path)
		}
		release <- struct{}{}
		wg.Wait()
		if !strings.Contains(body, "<strong>first</strong> answer") {
			t.Errorf("GET %s does not show the rendered answer:\n%s", path, body)
		}
	}
}

// The sidebar drawn right after a conversation opened and a job fired
// lists both, though the projections' live batch holds an event up to
// 50 ms before it commits: the list and the activity strip wait for the
// projections to apply what the log held (projections.Reader). Without
// the wait each sidebar came too soon.
func TestSidebarShowsWhatWasStoredJustBefore(t *testing.T) {
	h := newHarness(t)
	pages := h.pages()
	pages.Fresh = h.runner
	url := h.serve(t, web.Config{Pages: pages})
	for i := 1; i <= 3; i++ {
		conv, job := fmt.Sprintf("c%d", i), fmt.Sprintf("tea-%d", i)
		if _, err := h.log.Append(t.Context(), events.Conv(conv), 0, events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"})); err != nil {
			t.Fatal(err)
		}
		if _, err := h.log.Append(t.Context(), events.Job(job), 0, events.MustNew(&events.JobFired{Agent: "chef", Due: time.Now(),
			Conversation: "job-" + job, Origin: events.OriginChat})); err != nil {
			t.Fatal(err)
		}
		side := getBody(t, url+"/fragments/sidebar")
		if !strings.Contains(side, `href="/c/`+conv+`"`) || !strings.Contains(side, "Job "+job+" started") {
			t.Errorf("the sidebar right after %s opened and job %s fired:\n%s", conv, job, side)
		}
	}
}
