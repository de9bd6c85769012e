package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/projectionstest"
)

// feed reads an SSE response and reports each frame's id on ids, with
// the bytes read up to its end.
func feed(t *testing.T, resp *http.Response, ids chan<- [2]int, frames chan<- string) {
	t.Helper()
	go func() {
		n := 0
		defer close(ids)
		r := bufio.NewReader(resp.Body)
		var frame strings.Builder
		for {
			line, err := r.ReadString('\n')
			n += len(line)
			frame.WriteString(line)
			if err != nil {
				return
			}
			if line == "\n" {
				f := frame.String()
				frame.Reset()
				for _, l := range strings.Split(f, "\n") {
					if id, ok := strings.CutPrefix(l, "id: "); ok {
						seq, _ := strconv.ParseUint(id, 10, 64)
						if frames != nil {
							frames <- f
						}
						ids <- [2]int{int(seq), n}
					}
				}
			}
		}
	}()
}

// A 20-step run (a reply and a tool call with its result per step) costs
// the chat page a patch of the elements each event changed on its live
// feed (GET /c/{id}/live), against the stored events of /api/stream plus
// the chat fragment the page fetched again after each of them before the
// chat projection. Both are counted on the same history; the patches
// must be several times smaller, and each patch holds at most the two
// items an event of this run changes. docs/performance.md gives the
// figures.
// liveChat is a web server over a log with its projections, and add,
// which stores an event of conversation c1 (at a fixed time: the same
// bytes each run) and returns its sequence.
func liveChat(t *testing.T) (srv *httptest.Server, runner *projections.Runner, add func(events.Event) uint64) {
	t.Helper()
	log, db, runner := projectionstest.Start(t)
	srv = httptest.NewServer(web.New(web.Config{
		Log: log, Views: fakeViews{}, Health: func(context.Context) (bool, any) { return true, nil },
		Pages: &web.Pages{DB: db, Location: time.UTC, Clock: time.Now, Fresh: runner},
	}))
	t.Cleanup(srv.Close)
	scope := events.Conv("c1")
	var last uint64
	add = func(e events.Event) uint64 {
		t.Helper()
		env := events.MustNew(e)
		env.Time = time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
		stored, err := log.Append(t.Context(), scope, last, env)
		if err != nil {
			t.Fatal(err)
		}
		last = stored[len(stored)-1].Seq
		return last
	}
	return srv, runner, add
}

func TestChatLiveFeedSendsPatchesNotTheChat(t *testing.T) {
	ctx := t.Context()
	srv, runner, add := liveChat(t)
	add(&events.ConversationOpened{Agent: "master", Channel: "web"})
	add(&events.MessageReceived{Channel: "web", Text: "tidy up my notes folder, one file at a time"})
	start := add(&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	if err := runner.WaitFor(ctx, start); err != nil {
		t.Fatal(err)
	}

	open := func(path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != 200 {
			t.Fatalf("%s = %d", path, resp.StatusCode)
		}
		return resp
	}
	for path, want := range map[string]int{"/c/c1%24/live": 400, "/c/c1/live?after=x": 400} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s = %d, want %d", path, resp.StatusCode, want)
		}
	}
	after := strconv.FormatUint(start, 10)
	patchIDs, streamIDs := make(chan [2]int, 16), make(chan [2]int, 16)
	patches := make(chan string, 16)
	feed(t, open("/c/c1/live?after="+after), patchIDs, patches)
	feed(t, open("/api/stream?conversation=c1&after="+after), streamIDs, nil)
	patchBytes, streamBytes := 0, 0
	fragmentBytes := 0
	await := func(ids <-chan [2]int, seq uint64, what string) {
		t.Helper()
		for {
			select {
			case id, ok := <-ids:
				if !ok {
					t.Fatalf("%s ended before %d", what, seq)
				}
				if uint64(id[0]) >= seq {
					streamBytes = id[1]
					return
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s never reached %d", what, seq)
			}
		}
	}
	nEvents := 0
	step := func(e events.Event) {
		t.Helper()
		seq := add(e)
		nEvents++
		await(streamIDs, seq, "/api/stream")
		frame := ""
		for frame == "" || !strings.Contains(frame, "id: "+strconv.FormatUint(seq, 10)+"\n") {
			select {
			case frame = <-patches:
			case <-time.After(30 * time.Second):
				t.Fatalf("no patch for %d", seq)
			}
			patchBytes = (<-patchIDs)[1]
		}
		var p web.ChatPatch
		data := frame[strings.Index(frame, "data: ")+len("data: "):]
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &p); err != nil {
			t.Fatalf("patch %q: %v", frame, err)
		}
		if len(p.Slots) > 2 {
			t.Errorf("patch for %T holds %d items, want at most 2", e, len(p.Slots))
		}
		// Before the projection the page fetched the whole chat again.
		resp := open("/c/c1/fragment")
		body, _ := io.ReadAll(resp.Body)
		fragmentBytes += len(body)
	}
	for n := 1; n <= 20; n++ {
		id := fmt.Sprintf("call%d", n)
		step(&events.ModelCalled{RunID: "r1", Step: n, Route: "a", Model: "m", Text: fmt.Sprintf("Step %d: I read the next file and **tidy** it.", n),
			ToolCalls: []events.ToolCallRequest{{ID: id, Name: "workspace_read", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"notes/file-%02d.md"}`, n))}}})
		step(&events.ToolCalled{RunID: "r1", Step: n, CallID: id, Tool: "workspace_read"})
		step(&events.ToolCompleted{RunID: "r1", Step: n, CallID: id, Tool: "workspace_read", Output: strings.Repeat(fmt.Sprintf("line of file %d\n", n), 12)})
	}
	step(&events.ModelCalled{RunID: "r1", Step: 21, Route: "a", Model: "m", Text: "Done: twenty files tidied."})
	step(&events.RunFinished{RunID: "r1", Status: events.RunDone})

	before := streamBytes + fragmentBytes
	t.Logf("20-step run, %d events: before %d bytes (/api/stream %d + fragments %d), after %d bytes (/c/{id}/live)",
		nEvents, before, streamBytes, fragmentBytes, patchBytes)
	if patchBytes*4 > before {
		t.Errorf("live feed %d bytes, want under a quarter of the %d before", patchBytes, before)
	}
}

// A page rendered while a run worked ("working…" in its tail) whose feed
// opens after the run ended gets a resync that empties the tail: an idle
// chat's tail renders as nothing, and a resync that left out the parts
// that came out empty kept "working…" on the page for good.
func TestChatLiveResyncEmptiesTheTail(t *testing.T) {
	ctx := t.Context()
	srv, runner, add := liveChat(t)
	add(&events.ConversationOpened{Agent: "master", Channel: "web"})
	add(&events.MessageReceived{Channel: "web", Text: "hello"})
	rendered := add(&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	if err := runner.WaitFor(ctx, rendered); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/c/c1/fragment")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `data-testid="working"`) {
		t.Fatalf("the chat of a working run shows no working line:\n%s", page)
	}
	add(&events.ModelCalled{RunID: "r1", Step: 1, Route: "a", Model: "m", Text: "hi"})
	end := add(&events.RunFinished{RunID: "r1", Status: events.RunDone})
	if err := runner.WaitFor(ctx, end); err != nil {
		t.Fatal(err)
	}

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/c/c1/live?after="+strconv.FormatUint(rendered, 10), nil)
	live, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Body.Close() })
	ids, frames := make(chan [2]int, 16), make(chan string, 16)
	feed(t, live, ids, frames)
	select {
	case frame := <-frames:
		var p web.ChatPatch
		data := frame[strings.Index(frame, "data: ")+len("data: "):]
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &p); err != nil {
			t.Fatalf("patch %q: %v", frame, err)
		}
		if p.Type != "resync" || p.Status != "idle" {
			t.Fatalf("first frame = %s %s, want a resync of an idle chat", p.Type, p.Status)
		}
		if p.Tail == nil || strings.Contains(*p.Tail, "working") {
			t.Fatalf("the resync does not replace the tail that says working: %q", frame)
		}
		if p.Dropped == nil {
			t.Fatalf("the resync leaves #chat-dropped as the page had it: %q", frame)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no resync")
	}
}
