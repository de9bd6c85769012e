package web_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
)

// uploadSite is a site whose agents share one workspace.
type uploadSite struct {
	url string
	ws  string
	log *events.Log
}

func newUploadSite(t *testing.T) *uploadSite {
	t.Helper()
	h := newHarness(t)
	ws := filepath.Join(t.TempDir(), "workspace")
	os.MkdirAll(ws, 0o700)
	convs := loop.NewConvs(h.log, nil)
	in := &inbound.Inbound{Convs: convs, Kick: loop.KickFunc(func(string) {}), Master: "master", Crew: loop.Agents{"master": {ID: "master", Workspace: ws}},
		Clock: loop.WallClock{Zone: time.UTC}}
	pages := h.pages()
	pages.Fresh, pages.Crew = h.runner, listed{"master": {ID: "master", Workspace: ws}}
	url := h.serve(t, web.Config{Inbound: in, Approvals: &nopApprover{}, Pages: pages})
	return &uploadSite{url: url, ws: ws, log: h.log}
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 40, 30))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type filePart struct {
	name string
	data []byte
}

// postComposer posts the composer's multipart form as app.js does.
func postComposer(t *testing.T, c *http.Client, base string, fields map[string]string, files ...filePart) (int, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	for _, f := range files {
		w, _ := mw.CreateFormFile("image", f.name)
		w.Write(f.data)
	}
	mw.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/send", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Origin", base)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func inboxFiles(t *testing.T, ws string) []string {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(ws, "inbox"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func storedMessages(t *testing.T, log *events.Log) []*events.MessageReceived {
	t.Helper()
	var out []*events.MessageReceived
	for env, err := range log.Read(t.Context(), events.Root+".>", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Type != events.TypeMessageReceived {
			continue
		}
		ev, err := env.Decode()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev.(*events.MessageReceived))
	}
	return out
}

// Issue 16 item 4: an image sent from the web composer is stored under
// workspace/inbox/ (a name of its own, never the sender's path, never over
// another file) before the message, which names it as a Telegram photo is
// named; the chat shows it from the inbox route with its sniffed type and
// nosniff.
func TestWebUploadStoredInInboxBeforeTheMessage(t *testing.T) {
	s := newUploadSite(t)
	c := client(t)
	csrf := csrfOf(t, c, s.url)
	img := pngBytes(t)
	code, acc := postComposer(t, c, s.url, map[string]string{"csrf": csrf, "text": ""}, filePart{"../../../etc/passwd.png", img})
	if code != http.StatusAccepted {
		t.Fatalf("upload = %d %v", code, acc)
	}
	conv := acc["conversation_id"].(string)
	files := inboxFiles(t, s.ws)
	if len(files) != 1 || !strings.HasPrefix(files[0], "web-") || !strings.HasSuffix(files[0], "-passwd.png") {
		t.Fatalf("inbox holds %v", files)
	}
	if b, _ := os.ReadFile(filepath.Join(s.ws, "inbox", files[0])); !bytes.Equal(b, img) {
		t.Fatal("the stored image differs from the upload")
	}
	msgs := storedMessages(t, s.log)
	if len(msgs) != 1 || len(msgs[0].Attachments) != 1 || msgs[0].Attachments[0] != "inbox/"+files[0] || msgs[0].Channel != "web" {
		t.Fatalf("stored messages %+v", msgs)
	}
	// The same name again, into the same conversation: a second file, the
	// first untouched.
	other := pngBytes(t)
	other = append(other, 0) // different bytes, still a PNG by its magic
	code, acc = postComposer(t, c, s.url, map[string]string{"csrf": csrf, "text": "and this", "conversation_id": conv}, filePart{"passwd.png", other})
	if code != http.StatusAccepted || acc["conversation_id"] != conv {
		t.Fatalf("second upload = %d %v", code, acc)
	}
	files = inboxFiles(t, s.ws)
	if len(files) != 2 {
		t.Fatalf("inbox after a second upload of the same name: %v", files)
	}
	if b, _ := os.ReadFile(filepath.Join(s.ws, "inbox", files[0])); !bytes.Equal(b, img) && !bytes.Equal(b, other) {
		t.Fatal("an upload overwrote another")
	}

	// The chat shows the thumbnails, served from the inbox route.
	page := getPage(t, c, s.url+"/c/"+conv)
	for _, f := range files {
		if !strings.Contains(page, `src="/c/`+conv+`/inbox/`+f+`"`) {
			t.Errorf("the chat does not show %s:\n%s", f, page)
		}
	}
	resp, err := c.Get(s.url + "/c/" + conv + "/inbox/" + files[0])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("thumbnail = %d %q nosniff %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"))
	}

	// The JSON API takes the same images in base64.
	b, _ := json.Marshal(map[string]any{"text": "api photo", "conversation_id": conv, "images": []map[string]any{{"name": "meal.png", "data": img}}})
	code, body := postJSONTo(t, s.url+"/api/inbound", b)
	if code != http.StatusAccepted {
		t.Fatalf("api upload = %d %s", code, body)
	}
	msgs = storedMessages(t, s.log)
	if last := msgs[len(msgs)-1]; len(last.Attachments) != 1 || !strings.HasSuffix(last.Attachments[0], "-meal.png") {
		t.Errorf("api message attachments %v", last.Attachments)
	}
}

// Issue 16 item 4, the attacks: an SVG or HTML file named .png, an image
// over 10 MiB, a post without the CSRF token or from another origin, a
// /steer with an image — each refused with a JSON error saying why, and
// nothing stored (no file, no event). The inbox route serves only a file
// a message of that conversation names, and only as an image.
func TestWebUploadRefusesDisguisedOversizeAndForgedPosts(t *testing.T) {
	s := newUploadSite(t)
	c := client(t)
	csrf := csrfOf(t, c, s.url)
	svg := []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(1)</script></svg>`)
	html := []byte(`<!DOCTYPE html><html><script>fetch('/api/inbound')</script></html>`)
	big := append(pngBytes(t), make([]byte, inbound.MaxUpload)...)
	for _, tc := range []struct {
		name   string
		fields map[string]string
		file   filePart
		code   int
		errc   string
		says   string
	}{
		{"svg named png", map[string]string{"csrf": csrf, "text": "x"}, filePart{"cat.png", svg}, 422, "bad_attachment", "not a PNG, JPEG, GIF or WebP"},
		{"html named png", map[string]string{"csrf": csrf, "text": "x"}, filePart{"cat.png", html}, 422, "bad_attachment", "text/html"},
		{"over 10 MiB", map[string]string{"csrf": csrf, "text": "x"}, filePart{"big.png", big}, 413, "too_large", "over the 10 MiB limit"},
		{"no csrf", map[string]string{"text": "x"}, filePart{"ok.png", pngBytes(t)}, 403, "csrf", "CSRF"},
		{"wrong csrf", map[string]string{"csrf": strings.Repeat("b", 64), "text": "x"}, filePart{"ok.png", pngBytes(t)}, 403, "csrf", "CSRF"},
		{"steer with image", map[string]string{"csrf": csrf, "text": "/steer look"}, filePart{"ok.png", pngBytes(t)}, 400, "bad_request", "/steer takes no images"},
	} {
		code, out := postComposer(t, c, s.url, tc.fields, tc.file)
		e, _ := out["error"].(map[string]any)
		if code != tc.code || e["code"] != tc.errc || !strings.Contains(e["message"].(string), tc.says) {
			t.Errorf("%s: %d %v, want %d %s saying %q", tc.name, code, out, tc.code, tc.errc, tc.says)
		}
	}
	// Another origin, with the right token and cookie.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("csrf", csrf)
	mw.WriteField("text", "x")
	w, _ := mw.CreateFormFile("image", "ok.png")
	w.Write(pngBytes(t))
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, s.url+"/send", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", "http://evil.example")
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin upload = %v %v, want 403", resp.StatusCode, err)
	}
	// The JSON API refuses the same disguise.
	b, _ := json.Marshal(map[string]any{"text": "x", "images": []map[string]any{{"name": "cat.png", "data": svg}}})
	if code, out := postJSONTo(t, s.url+"/api/inbound", b); code != 422 || !strings.Contains(out, "bad_attachment") {
		t.Errorf("api svg = %d %s", code, out)
	}
	if files := inboxFiles(t, s.ws); len(files) != 0 {
		t.Errorf("refused uploads left files: %v", files)
	}
	if msgs := storedMessages(t, s.log); len(msgs) != 0 {
		t.Errorf("refused uploads stored messages: %+v", msgs)
	}

	// The inbox route: an SVG a message names (an attachment by path) is
	// not served as anything, a file no message names is not served, nor
	// a path out of the inbox.
	os.MkdirAll(filepath.Join(s.ws, "inbox"), 0o700)
	os.WriteFile(filepath.Join(s.ws, "inbox", "evil.png"), svg, 0o600)
	os.WriteFile(filepath.Join(s.ws, "inbox", "unnamed.png"), pngBytes(t), 0o600)
	os.WriteFile(filepath.Join(s.ws, "secret.png"), pngBytes(t), 0o600)
	b, _ = json.Marshal(map[string]any{"text": "see", "attachments": []string{"inbox/evil.png"}})
	code, out := postJSONTo(t, s.url+"/api/inbound", b)
	if code != 202 {
		t.Fatalf("attachment by path = %d %s", code, out)
	}
	var acc struct {
		ConversationID string `json:"conversation_id"`
	}
	json.Unmarshal([]byte(out), &acc)
	for path, want := range map[string]int{
		"evil.png": 415, "unnamed.png": 404, "..%2fsecret.png": 404, "%2e%2e": 404, ".hidden": 404,
	} {
		resp, err := c.Get(s.url + "/c/" + acc.ConversationID + "/inbox/" + path)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") || bytes.Contains(raw, []byte("<svg")) {
			t.Errorf("inbox/%s = %d %q, want %d and no image", path, resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
	}
}

func getPage(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}

func postJSONTo(t *testing.T, u string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(u, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// An agent that replaced its workspace's inbox/ by a symlink leading out of
// the workspace (its shell can) does not get the owner's next upload
// written there, even for a moment: the post is refused naming the inbox
// before any file is written, and nothing lands outside.
func TestWebUploadNeverFollowsInboxOutOfWorkspace(t *testing.T) {
	s := newUploadSite(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(s.ws, "inbox")); err != nil {
		t.Fatal(err)
	}
	c := client(t)
	csrf := csrfOf(t, c, s.url)
	code, acc := postComposer(t, c, s.url, map[string]string{"csrf": csrf, "text": "look"}, filePart{"meal.png", pngBytes(t)})
	if code == http.StatusAccepted {
		t.Errorf("upload through a symlinked inbox = %d %v, want refused", code, acc)
	}
	e, _ := acc["error"].(map[string]any)
	if msg, _ := e["message"].(string); e["code"] != "bad_attachment" || !strings.Contains(msg, "the inbox of master is not a folder inside its workspace") {
		t.Errorf("refusal %v does not name the inbox", acc)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("the upload was written outside the workspace: %v", ents)
	}
	if msgs := storedMessages(t, s.log); len(msgs) != 0 {
		t.Errorf("a message was stored: %+v", msgs)
	}
}

// listed is a fixed crew as the pages list it.
type listed map[string]view.Agent

func (c listed) Agent(id string) (view.Agent, bool) { a, ok := c[id]; return a, ok }

func (c listed) List() ([]view.Agent, []string) { return []view.Agent{c["master"]}, nil }
