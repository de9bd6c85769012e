package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// scriptedAPI is an OpenAI-compatible /chat/completions endpoint (the
// OpenRouter and the Ollama shapes) answering request n with reply(n):
// a text, or a tool call when the text is "call NAME ARGS". It keeps every
// request body.
type scriptedAPI struct {
	*httptest.Server
	reply  func(n int) string
	mu     sync.Mutex
	bodies []string
}

func newScriptedAPI(t *testing.T, reply func(n int) string) *scriptedAPI {
	t.Helper()
	a := &scriptedAPI{reply: reply}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.Close)
	return a
}

func (a *scriptedAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/api/tags" {
		io.WriteString(w, `{"models":[{"name":"llava"}]}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	n := len(a.bodies)
	a.bodies = append(a.bodies, string(body))
	a.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	text := a.reply(n)
	if call, ok := strings.CutPrefix(text, "call "); ok {
		name, args, _ := strings.Cut(call, " ")
		qa, _ := json.Marshal(args)
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":"tool_calls"}]}`+"\n\n", n, name, qa)
	} else {
		b, _ := json.Marshal(text)
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":%s},"finish_reason":"stop"}]}`+"\n\n", b)
	}
	fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":5,"cost":0.0001}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (a *scriptedAPI) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.bodies...)
}

// postPhoto sends text and a PNG through the web composer's multipart
// form, as the chat page does, and returns the new conversation's id.
func postPhoto(t *testing.T, base, text string, photo []byte) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(base)
	csrf := ""
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "crew_csrf" {
			csrf = ck.Value
		}
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("csrf", csrf)
	mw.WriteField("text", text)
	fw, _ := mw.CreateFormFile("image", "bữa trưa.png")
	fw.Write(photo)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/send", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var acc struct {
		ConversationID string `json:"conversation_id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(b, &acc) != nil || acc.ConversationID == "" {
		t.Fatalf("POST /send with a photo = %d %s", resp.StatusCode, b)
	}
	return acc.ConversationID
}

// Issue 29 item 5 (R-LLM-3) through a real crew serve and real Chromium:
// the master's route (an OpenRouter emulator) cannot see, its vision_routes
// names an Ollama emulator. A photo sent on the web goes to the vision
// route with the owner's words; the next message is back on the master's
// route; a browser_screenshot's image goes to the vision route with the
// step that reads it, and the step after is back. Each move is a
// route_fallback with reason vision, shown on the run card and kept by the
// export; the chat says no route is failing.
func TestVisionRouteTakesPhotosAndScreenshotsThroughServe(t *testing.T) {
	chromiumPath(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><title>Chart</title><h1>Sales went up</h1>`)
	}))
	defer site.Close()
	text := newScriptedAPI(t, func(n int) string {
		return []string{"call browser_navigate " + `{"url":"` + site.URL + `/"}`, "call browser_screenshot {}", "Done: the page shows a chart."}[min(n, 2)]
	})
	eye := newScriptedAPI(t, func(n int) string {
		if n == 0 {
			return "A bowl of phở, about 450 kcal."
		}
		return `call progress_note {"text":"the screenshot shows a heading: Sales went up"}`
	})
	home := initHome(t)
	autonomousMaster(t, home)
	appendFile(t, filepath.Join(home, "config.yaml"), "\nbrowser_enabled: true\n")
	appendFile(t, filepath.Join(home, "agent.yaml"), "\nbrowser: act\nbrowser_hosts: [\"127.0.0.1\"]\nvision_routes: [\"ollama:llava\"]\n")
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/text", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+text.URL+"/v1",
		"OLLAMA_HOST="+eye.URL, "CREW_TEST_ALLOW_ADDRS="+strings.TrimPrefix(site.URL, "http://"))

	id := postPhoto(t, s.url, "How many calories?", testImage(t, png.Encode))
	waitConv(t, s.url, id, "the photo answered", settled)
	if got := text.requests(); len(got) != 0 {
		t.Fatalf("the master's blind route got the photo's call: %d requests", len(got))
	}
	if got := eye.requests(); len(got) != 1 || !strings.Contains(got[0], `"image_url"`) || !strings.Contains(got[0], "data:image/png;base64,") || !strings.Contains(got[0], "How many calories?") {
		t.Fatalf("the vision route's requests: %d, the first without the photo and the words", len(got))
	}

	postJSON(t, s.url+"/api/inbound", map[string]any{"text": "Now open the page and look at it.", "conversation_id": id})
	c := waitConv(t, s.url, id, "the page looked at", func(c convView) bool {
		return settled(c) && len(c.History) > 2 && c.History[len(c.History)-1].Text == "Done: the page shows a chart."
	})
	tr, er := text.requests(), eye.requests()
	if len(tr) != 3 || len(er) != 2 {
		t.Fatalf("%d requests to the master's route, %d to the vision route; want 3 and 2\n%+v", len(tr), len(er), c.History)
	}
	for i, b := range tr {
		if strings.Contains(b, `"image_url"`) {
			t.Errorf("request %d to the blind route carries an image", i)
		}
	}
	if !strings.Contains(tr[0], "was attached earlier") {
		t.Errorf("back on the master's route, the photo is not named as attached earlier")
	}
	if !strings.Contains(er[1], `"image_url"`) || !strings.Contains(er[1], "Images returned by tool calls") || !strings.Contains(er[1], "browser_screenshot") {
		t.Errorf("the screenshot's step did not reach the vision route with its image")
	}

	runs := finishedRuns(t, s.url, id, 2)
	var vision []string
	for _, r := range runs {
		var run struct {
			Steps []struct {
				Step      int `json:"step"`
				Fallbacks []struct {
					From, To, Reason string
				} `json:"fallbacks"`
				ModelCalls []struct {
					Route string `json:"route"`
				} `json:"model_calls"`
			} `json:"steps"`
		}
		getJSON(t, s.url+"/api/runs/"+r.RunID, &run)
		for _, st := range run.Steps {
			for _, f := range st.Fallbacks {
				vision = append(vision, fmt.Sprintf("%d:%s>%s:%s", st.Step, f.From, f.To, f.Reason))
			}
			for _, mc := range st.ModelCalls {
				vision = append(vision, fmt.Sprintf("%d:%s", st.Step, mc.Route))
			}
		}
	}
	want := "1:openrouter:vendor/text>ollama:llava:vision 1:ollama:llava " +
		"1:openrouter:vendor/text 2:openrouter:vendor/text 3:openrouter:vendor/text>ollama:llava:vision 3:ollama:llava 4:openrouter:vendor/text"
	if got := strings.Join(vision, " "); got != want {
		t.Errorf("runs view:\n got %s\nwant %s", got, want)
	}
	if page := getPage(t, s.url+"/c/"+id+"/runs"); strings.Count(page, "route_fallback (vision)") != 2 || !strings.Contains(page, "this call went to ollama:llava") {
		t.Errorf("the runs page does not show the two vision moves")
	}
	if chat := getPage(t, s.url+"/c/"+id); strings.Contains(chat, "is failing") {
		t.Errorf("the chat calls a vision move a failing route")
	}
	out, errOut, code := crew(t, home, "export", id)
	if code != 0 || strings.Count(out, `"reason":"vision"`) != 2 {
		t.Errorf("export: code %d, %d vision route_fallback\n%s", code, strings.Count(out, `"reason":"vision"`), errOut)
	}
	s.stop(t)
}
