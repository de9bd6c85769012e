package loop_test

import (
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
)

// sentImages counts the image parts of one request, and joins its text.
func sentImages(msgs []llm.Message) (n int, text string) {
	for _, m := range msgs {
		urls, t := imageParts(m)
		n += len(urls)
		text += t
	}
	return n, text
}

// calledRoutes are the routes of the turn's model_called, in order.
func calledRoutes(evs []events.Event) []string {
	var out []string
	for _, mc := range eventsOf[*events.ModelCalled](evs) {
		out = append(out, mc.Route)
	}
	return out
}

// Issue 29 item 5 (R-LLM-3): a call whose request carries an image — an
// owner's photo, a tool result's screenshot — on a route that cannot see
// goes to the agent's first vision route, recorded as route_fallback with
// reason vision; the next call without an image is back on the agent's
// route, in the same run and in the next. Replay reproduces both runs.
func TestVisionRouteTakesTheCallThatCarriesAnImage(t *testing.T) {
	h := newHarness(t, map[string][]reply{
		"fake:a":   {use("shoot", `{}`), say("done")},
		"fake:eye": {say("một bát phở"), use("progress_note", `{"text":"a chart"}`)},
	}, screenTool{})
	h.agent.Routes = []string{"fake:a"}
	h.agent.VisionRoutes = []string{"fake:eye", "fake:eye2"}
	h.deps.HomeDir = h.agent.Dir
	writePhoto(t, h.agent.Workspace, "inbox/42.jpg")

	// A photo: the call goes to fake:eye with the image; fake:a is not asked.
	h.append(&events.ConversationOpened{Agent: "master", Channel: "web"})
	h.append(&events.MessageReceived{Channel: "web", Text: "what is this?", Attachments: []string{"inbox/42.jpg"}})
	h.turn()
	if n := h.models["fake:a"].calls(); n != 0 {
		t.Fatalf("fake:a was asked %d times for the photo", n)
	}
	eye := h.models["fake:eye"].seen
	if n, text := sentImages(eye[0]); len(eye) != 1 || n != 1 || !strings.Contains(text, "what is this?") {
		t.Fatalf("fake:eye got %d requests, the first with %d images and %q", len(eye), n, text)
	}

	// Text only, then a screenshot: step 1 on fake:a, step 2 (it reads the
	// image) on fake:eye, step 3 back on fake:a without the image.
	h.send("look at the screen")
	h.turn()
	evs := h.events()
	if got := strings.Join(calledRoutes(evs), " "); got != "fake:eye fake:a fake:eye fake:a" {
		t.Errorf("model calls on %s", got)
	}
	a := h.models["fake:a"].seen
	if n, text := sentImages(a[0]); n != 0 || !strings.Contains(text, "inbox/42.jpg was attached earlier") {
		t.Errorf("back on fake:a, the old photo: %d images, %q", n, text)
	}
	if n, _ := sentImages(h.models["fake:eye"].seen[1]); n != 1 {
		t.Errorf("the screenshot's step sent %d images to fake:eye", n)
	}
	if n, _ := sentImages(a[1]); n != 0 {
		t.Errorf("the step after the screenshot sent %d images to fake:a", n)
	}
	fbs := eventsOf[*events.RouteFallback](evs)
	if len(fbs) != 2 {
		t.Fatalf("%d route_fallback, want 2: %+v", len(fbs), fbs)
	}
	for i, want := range []int{1, 2} {
		if fb := fbs[i]; fb.Reason != events.FallbackVision || fb.From != "fake:a" || fb.To != "fake:eye" || fb.Error != "" || fb.Step != want {
			t.Errorf("route_fallback %d: %+v", i, fb)
		}
	}
	if st := h.state(); st.Messages[len(st.Messages)-1].Text != "done" {
		t.Errorf("the run ended on %q", st.Messages[len(st.Messages)-1].Text)
	}
	if got := exported(t, h, events.TypeRouteFallback); got[events.TypeRouteFallback] != 2 {
		t.Errorf("export holds %d route_fallback", got[events.TypeRouteFallback])
	}

	envs, err := h.log.ReadAll(t.Context(), events.Conv(h.conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range eventsOf[*events.RunStarted](evs) {
		rep, err := loop.ReplayWith(t.Context(), envs, run.RunID, h.agent, h.deps, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Diverged != nil {
			t.Errorf("replay of %s diverged at %+v", run.RunID, *rep.Diverged)
		}
	}
}

// Without vision_routes, the route that cannot see is told plainly that
// no model of the agent can, and where to set one, for a photo and a
// screenshot alike; no route_fallback. With vision routes that all fail,
// the call falls back to the agent's route, the image named instead.
func TestVisionWithoutVisionRouteSaysSo(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("I cannot see it"), use("shoot", `{}`), say("done")}}, screenTool{})
	h.deps.HomeDir = h.agent.Dir
	writePhoto(t, h.agent.Workspace, "inbox/42.jpg")
	h.append(&events.ConversationOpened{Agent: "master", Channel: "web"})
	h.append(&events.MessageReceived{Channel: "web", Attachments: []string{"inbox/42.jpg"}})
	h.turn()
	h.send("look at the screen")
	h.turn()
	seen := h.models["fake:a"].seen
	if len(seen) != 3 {
		t.Fatalf("%d calls", len(seen))
	}
	for i, req := range []int{0, 2} {
		n, text := sentImages(seen[req])
		if n != 0 || !strings.Contains(text, "this agent cannot see images") || !strings.Contains(text, "sets no vision_routes") {
			t.Errorf("case %d: %d images, text %q", i, n, text)
		}
	}
	if fbs := eventsOf[*events.RouteFallback](h.events()); len(fbs) != 0 {
		t.Errorf("route_fallback without vision routes: %+v", fbs)
	}

	h2 := newHarness(t, map[string][]reply{
		"fake:a":   {say("no image reached me")},
		"fake:eye": {fail(503), fail(503), fail(503), fail(503)},
	})
	h2.agent.Routes = []string{"fake:a"}
	h2.agent.VisionRoutes = []string{"fake:eye"}
	writePhoto(t, h2.agent.Workspace, "inbox/42.jpg")
	h2.append(&events.ConversationOpened{Agent: "master", Channel: "web"})
	h2.append(&events.MessageReceived{Channel: "web", Text: "and this?", Attachments: []string{"inbox/42.jpg"}})
	h2.turn()
	fbs := eventsOf[*events.RouteFallback](h2.events())
	if len(fbs) != 2 || !fbs[0].Vision() || fbs[1].Vision() || fbs[1].From != "fake:eye" || fbs[1].To != "fake:a" {
		t.Fatalf("route_fallback %+v", fbs)
	}
	a := h2.models["fake:a"].seen
	if n, text := sentImages(a[0]); len(a) != 1 || n != 0 || !strings.Contains(text, "inbox/42.jpg is attached, but this model cannot see images") {
		t.Errorf("after the vision route failed: %d images, %q", n, text)
	}
}
