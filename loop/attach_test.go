package loop_test

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
)

func writePhoto(t *testing.T, ws, rel string) {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2000, 1000)), nil); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o700)
	if err := os.WriteFile(filepath.Join(ws, rel), b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func imageParts(msg llm.Message) (urls []string, text string) {
	for _, p := range msg.Parts {
		if p.ImageURL != "" {
			urls = append(urls, p.ImageURL)
		} else {
			text += p.Text
		}
	}
	return urls, text
}

// R-LLM-3, seed 000 §3 step 1: a photo without a caption reaches a route
// that can see as "[photo: inbox/…]" with the image, downscaled, as an
// image_url part; a route that cannot see gets the path and a note.
func TestAttachmentPhotoWithoutCaptionReachesVisionRouteAsImage(t *testing.T) {
	h := newHarness(t, nil)
	models, _ := scripted(t, h, [][2]string{{"fake:a", "- text: một bát phở\n"}})
	h.agent.VisionRoutes = []string{"fake:a"}
	writePhoto(t, h.agent.Workspace, "inbox/42.jpg")
	h.append(&events.ConversationOpened{Agent: "master", Channel: "telegram:1"})
	h.append(&events.MessageReceived{Channel: "telegram:1", Attachments: []string{"inbox/42.jpg"}})
	h.turn()
	req := models["fake:a"].msgs[0]
	urls, text := imageParts(req[len(req)-1])
	if text != "[photo: inbox/42.jpg]" || len(urls) != 1 || !strings.HasPrefix(urls[0], "data:image/jpeg;base64,") {
		t.Fatalf("last message: text %q, %d images", text, len(urls))
	}
	if st := h.state(); st.Messages[0].Text != "[photo: inbox/42.jpg]" {
		t.Errorf("history shows %q", st.Messages[0].Text)
	}

	// The same photo on a route that cannot see: the path and a note.
	h2 := newHarness(t, nil)
	models, _ = scripted(t, h2, [][2]string{{"fake:a", "- text: ok\n"}})
	h2.agent.VisionRoutes = []string{"fake:other"}
	h2.agent.Tools = append(h2.agent.Tools, "image_read")
	writePhoto(t, h2.agent.Workspace, "inbox/42.jpg")
	h2.append(&events.ConversationOpened{Agent: "master", Channel: "web"})
	h2.append(&events.MessageReceived{Channel: "web", Text: "bữa trưa", Attachments: []string{"inbox/42.jpg"}})
	h2.turn()
	req = models["fake:a"].msgs[0]
	urls, text = imageParts(req[len(req)-1])
	if len(urls) != 0 || !strings.Contains(text, "bữa trưa") || !strings.Contains(text, "inbox/42.jpg is attached, but this model cannot see images: call image_read") {
		t.Errorf("non-vision route got %d images, text %q", len(urls), text)
	}
}

// R-LLM-3: image_read sends a workspace image to the agent's vision_routes
// and returns the description; the call is a model_called with purpose
// vision.
func TestImageReadUsesVisionRoutes(t *testing.T) {
	h := newHarness(t, nil)
	models, _ := scripted(t, h, [][2]string{
		{"fake:a", "- tool_calls: [{name: image_read, arguments: {path: inbox/meal.jpg}}]\n- text: Bữa ăn có phở.\n"},
		{"fake:eye", "- text: 'A bowl of phở with beef.'\n"},
	})
	h.agent.Routes = []string{"fake:a"}
	h.agent.VisionRoutes = []string{"fake:eye"}
	h.agent.Tools = append(h.agent.Tools, "image_read")
	writePhoto(t, h.agent.Workspace, "inbox/meal.jpg")
	h.send("ăn gì?")
	h.turn()
	evs := h.events()
	var out string
	for _, c := range eventsOf[*events.ToolCompleted](evs) {
		if c.Tool == "image_read" {
			out = c.Output
		}
	}
	if !strings.Contains(out, "A bowl of phở with beef.") || !strings.Contains(out, "fake:eye") {
		t.Fatalf("image_read result %q", out)
	}
	eye := models["fake:eye"].msgs
	if len(eye) != 1 {
		t.Fatalf("%d vision calls", len(eye))
	}
	if urls, _ := imageParts(eye[0][0]); len(urls) != 1 {
		t.Errorf("vision request holds %d images", len(urls))
	}
	vision := 0
	for _, mc := range eventsOf[*events.ModelCalled](evs) {
		if mc.Purpose == events.PurposeVision && mc.Route == "fake:eye" {
			vision++
		}
	}
	if vision != 1 {
		t.Errorf("%d vision model_called", vision)
	}
	// Without vision_routes the call is refused before it runs.
	h2 := newHarness(t, nil)
	scripted(t, h2, [][2]string{{"fake:a", "- tool_calls: [{name: image_read, arguments: {path: x.jpg}}]\n- text: ok\n"}})
	h2.agent.Tools = append(h2.agent.Tools, "image_read")
	h2.send("look")
	h2.turn()
	for _, c := range eventsOf[*events.ToolCompleted](h2.events()) {
		if c.Tool == "image_read" && (!c.IsError || !strings.Contains(c.Output, "vision_routes")) {
			t.Errorf("without vision_routes: %+v", c)
		}
	}
}

// R-X-5, issue 33 item 3: who pays is a field of every request, not a
// context value: the turn's steps and the vision call image_read makes
// from inside a tool are each charged to the agent, the conversation, the
// run and the step, the vision call with purpose vision.
func TestEveryModelCallOfATurnNamesItsPayer(t *testing.T) {
	h := newHarness(t, nil)
	scripted(t, h, [][2]string{
		{"fake:a", "- tool_calls: [{name: image_read, arguments: {path: inbox/meal.jpg}}]\n- text: Bữa ăn có phở.\n"},
		{"fake:eye", "- text: 'A bowl of phở with beef.'\n"},
	})
	h.agent.Routes = []string{"fake:a"}
	h.agent.VisionRoutes = []string{"fake:eye"}
	h.agent.Tools = append(h.agent.Tools, "image_read")
	writePhoto(t, h.agent.Workspace, "inbox/meal.jpg")
	var mu sync.Mutex
	var got []llm.Request
	models := h.deps.Models
	h.deps.Models = llm.ModelsFunc(func(route string) (llm.Model, error) {
		m, err := models.Model(route)
		if err != nil {
			return nil, err
		}
		return llm.ModelFunc(func(ctx context.Context, req llm.Request) (llm.Reply, error) {
			mu.Lock()
			got = append(got, req)
			mu.Unlock()
			return m.Call(ctx, req)
		}), nil
	})
	h.send("ăn gì?")
	h.turn()
	run := eventsOf[*events.RunStarted](h.events())[0].RunID
	want := []struct {
		route, purpose string
		step           int
	}{{"fake:a", "", 1}, {"fake:eye", events.PurposeVision, 1}, {"fake:a", "", 2}}
	if len(got) != len(want) {
		t.Fatalf("%d model calls, want %d", len(got), len(want))
	}
	for i, w := range want {
		p := llm.Payer{Agent: "master", Conversation: h.conv, RunID: run, Step: w.step, CapUSD: h.agent.CostCapUSD}
		if r := got[i]; r.Route != w.route || r.Purpose != w.purpose || !reflect.DeepEqual(r.Payer, p) {
			t.Errorf("call %d: route %q purpose %q payer %+v; want %q %q %+v", i+1, r.Route, r.Purpose, r.Payer, w.route, w.purpose, p)
		}
	}
}
