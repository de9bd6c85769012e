package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const canvasScript = `
- tool_calls:
    - name: artifact_create
      arguments: {title: "Agent plan", kind: markdown, content: "one\ntwo\n"}
    - name: artifact_import
      arguments: {path: notes.md}
- text: "Made a plan and imported your notes."
- tool_calls:
    - name: artifact_create
      arguments: {title: "From the API", kind: markdown, content: "x"}
- text: "I could not write it."
- text: "I see what changed."
`

// apiDo sends a JSON request and decodes a JSON answer.
func apiDo(t *testing.T, method, url string, body any, hdr ...string) (int, map[string]any, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, out, resp.Header
}

func artifactsByTitle(t *testing.T, url string) map[string]map[string]any {
	t.Helper()
	_, out, _ := apiDo(t, "GET", url+"/api/artifacts", nil)
	by := map[string]map[string]any{}
	list, _ := out["artifacts"].([]any)
	for _, a := range list {
		m := a.(map[string]any)
		by[m["title"].(string)] = m
	}
	return by
}

// The REST routes of the canvas issue against a real crew serve: an agent
// makes canvases on a web turn and is refused on an api turn; the owner
// lists, reads, saves (409 with the diff on a stale base_version), renames,
// restores, downloads, reimports, focuses and deletes; render answers only
// a sandboxed iframe's request.
func TestCanvasRESTRoutes(t *testing.T) {
	home := initHome(t)
	os.MkdirAll(filepath.Join(home, "workspace"), 0o755)
	os.WriteFile(filepath.Join(home, "workspace", "notes.md"), []byte("# Notes\n"), 0o644)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, canvasScript))

	code, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "make a plan", "channel": "web"})
	if code != 202 {
		t.Fatalf("inbound: %d %v", code, acc)
	}
	webConv := acc["conversation_id"].(string)
	waitConv(t, s.url, webConv, "settled", settled)
	_, acc = postJSON(t, s.url+"/api/inbound", map[string]any{"text": "write from the api"})
	apiConv := acc["conversation_id"].(string)
	c := waitConv(t, s.url, apiConv, "settled", settled)
	refused := false
	for _, m := range c.History {
		if m.Role == "tool" && m.IsError && strings.Contains(m.Text, "API channel") {
			refused = true
		}
	}
	if !refused {
		t.Errorf("an api-channel turn wrote a canvas: %+v", c.History)
	}

	by := artifactsByTitle(t, s.url)
	plan, notes := by["Agent plan"], by["notes.md"]
	if plan == nil || notes == nil || by["From the API"] != nil {
		t.Fatalf("artifacts: %v", by)
	}
	id := plan["id"].(string)
	if convs := plan["conversations"].([]any); len(convs) != 1 || convs[0] != webConv {
		t.Errorf("the agent's canvas is linked to %v, want %s", convs, webConv)
	}
	if _, out, _ := apiDo(t, "GET", s.url+"/api/artifacts?q=PLAN", nil); len(out["artifacts"].([]any)) != 1 {
		t.Errorf("?q= filters by title: %v", out)
	}

	// Owner creates: 201 {id, version}; an image only by import.
	code, out, _ := apiDo(t, "POST", s.url+"/api/artifacts", map[string]any{"title": "Mine", "kind": "code", "language": "go", "content": "package x\n"})
	if code != 201 || out["version"] != 1.0 || out["id"] == "" {
		t.Fatalf("create: %d %v", code, out)
	}
	mine := out["id"].(string)
	if code, _, _ := apiDo(t, "POST", s.url+"/api/artifacts", map[string]any{"title": "P", "kind": "image", "content": "x"}); code != 422 {
		t.Errorf("REST image create: %d, want 422", code)
	}
	if code, _, _ := apiDo(t, "POST", s.url+"/api/artifacts", map[string]any{"title": "Big", "kind": "markdown", "content": strings.Repeat("x", 600<<10)}); code != 413 {
		t.Errorf("over the cap: %d, want 413", code)
	}

	// Save on the agent's version adds v2; a stale base is 409 with the diff.
	code, out, _ = apiDo(t, "PUT", s.url+"/api/artifacts/"+id, map[string]any{"content": "one\nTWO\n", "base_version": 1})
	if code != 200 || out["version"] != 2.0 || out["replaced"] != false {
		t.Fatalf("save: %d %v", code, out)
	}
	code, out, _ = apiDo(t, "PUT", s.url+"/api/artifacts/"+id, map[string]any{"content": "one\nthree\n", "base_version": 1})
	if code != 409 || !strings.Contains(out["diff"].(string), "+TWO") || out["latest_version"] != 2.0 {
		t.Fatalf("stale save: %d %v", code, out)
	}
	// The owner's own fresh, unseen version is replaced (120-second rule).
	code, out, _ = apiDo(t, "PUT", s.url+"/api/artifacts/"+id, map[string]any{"content": "one\nTWO!\n", "base_version": 2})
	if code != 200 || out["version"] != 2.0 || out["replaced"] != true {
		t.Fatalf("merged save: %d %v", code, out)
	}
	code, out, _ = apiDo(t, "GET", s.url+"/api/artifacts/"+id+"?version=1", nil)
	if code != 200 || out["content"] != "one\ntwo\n" || out["author"] != "master" || out["latest_version"] != 2.0 {
		t.Fatalf("read v1: %d %v", code, out)
	}

	if code, out, _ = apiDo(t, "PATCH", s.url+"/api/artifacts/"+id, map[string]any{"title": "Our plan"}); code != 200 || out["title"] != "Our plan" {
		t.Fatalf("rename: %d %v", code, out)
	}
	if code, out, _ = apiDo(t, "POST", s.url+"/api/artifacts/"+id+"/restore", map[string]any{"version": 1}); code != 200 || out["version"] != 3.0 {
		t.Fatalf("restore: %d %v", code, out)
	}
	_, out, _ = apiDo(t, "GET", s.url+"/api/artifacts/"+id+"/versions", nil)
	vs := out["versions"].([]any)
	newest := vs[0].(map[string]any)
	if len(vs) != 3 || newest["note"] != "restored from v1" || newest["author"] != "owner" || vs[2].(map[string]any)["author"] != "master" {
		t.Fatalf("history: %v", vs)
	}

	resp, err := http.Get(s.url + "/api/artifacts/" + mine + "/download")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "package x\n" || !strings.Contains(resp.Header.Get("Content-Disposition"), `filename=Mine.go`) || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("download: %q %v", body, resp.Header)
	}

	// Reimport reads the source file again: changed → a version, else none.
	nid := notes["id"].(string)
	if code, out, _ = apiDo(t, "POST", s.url+"/api/artifacts/"+nid+"/reimport", map[string]any{}); code != 200 || out["changed"] != false {
		t.Fatalf("unchanged reimport: %d %v", code, out)
	}
	os.WriteFile(filepath.Join(home, "workspace", "notes.md"), []byte("# Notes\nmore\n"), 0o644)
	if code, out, _ = apiDo(t, "POST", s.url+"/api/artifacts/"+nid+"/reimport", map[string]any{}); code != 200 || out["version"] != 2.0 {
		t.Fatalf("reimport: %d %v", code, out)
	}
	if code, _, _ = apiDo(t, "POST", s.url+"/api/artifacts/"+mine+"/reimport", map[string]any{}); code != 409 {
		t.Errorf("reimport without a source: %d, want 409", code)
	}

	// The conversation's open canvas and selection.
	if code, out, _ = apiDo(t, "PUT", s.url+"/api/conversations/"+webConv+"/canvas", map[string]any{"artifact": id, "from_line": 1, "to_line": 2}); code != 200 {
		t.Fatalf("focus: %d %v", code, out)
	}
	if _, out, _ = apiDo(t, "GET", s.url+"/api/conversations/"+webConv+"/canvas", nil); out["artifact"] != id || out["to_line"] != 2.0 {
		t.Errorf("focus read back: %v", out)
	}
	if code, _, _ = apiDo(t, "PUT", s.url+"/api/conversations/nobody-here/canvas", map[string]any{"artifact": id}); code != 404 {
		t.Errorf("focus on no conversation: %d", code)
	}
	if code, _, _ = apiDo(t, "PUT", s.url+"/api/conversations/"+webConv+"/canvas", map[string]any{"artifact": "nope"}); code != 404 {
		t.Errorf("focus on no canvas: %d", code)
	}

	// The next web message carries the canvas notes: the owner's reimport
	// as a diff, the restore as a line to read again, the open canvas and
	// its selected lines.
	_, acc = postJSON(t, s.url+"/api/inbound", map[string]any{"text": "what changed?", "channel": "web", "conversation_id": webConv})
	waitConv(t, s.url, webConv, "settled again", func(c convView) bool {
		return settled(c) && c.History[len(c.History)-1].Text == "I see what changed."
	})
	resp, err = http.Get(s.url + "/api/conversations/" + webConv + "/export")
	if err != nil {
		t.Fatal(err)
	}
	export, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var note string
	for _, line := range strings.Split(string(export), "\n") {
		var l struct {
			Type string `json:"type"`
			Data struct {
				Text        string `json:"text"`
				CanvasNotes *struct {
					Text string `json:"text"`
				} `json:"canvas_notes"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Type == "message_received" && l.Data.Text == "what changed?" && l.Data.CanvasNotes != nil {
			note = l.Data.CanvasNotes.Text
		}
	}
	for _, want := range []string{"open beside the chat", "lines 1-2:\none", "restores version 1", "read it again", "+more"} {
		if !strings.Contains(note, want) {
			t.Errorf("canvas note lacks %q:\n%s", want, note)
		}
	}

	// Render: html and mermaid only, only for a sandboxed iframe.
	_, out, _ = apiDo(t, "POST", s.url+"/api/artifacts", map[string]any{"title": "Page", "kind": "html", "content": "<p>hi</p>"})
	page := out["id"].(string)
	if code, _, _ = apiDo(t, "GET", s.url+"/api/artifacts/"+page+"/render", nil); code != 403 {
		t.Errorf("render without Sec-Fetch-Dest: %d, want 403", code)
	}
	if code, _, _ = apiDo(t, "GET", s.url+"/api/artifacts/"+page+"/render", nil, "Sec-Fetch-Dest", "document", "Sec-Fetch-Site", "none"); code != 403 {
		t.Errorf("render opened as a page: %d, want 403", code)
	}
	code, _, hdr := apiDo(t, "GET", s.url+"/api/artifacts/"+page+"/render", nil, "Sec-Fetch-Dest", "iframe", "Sec-Fetch-Site", "same-origin")
	if csp := hdr.Get("Content-Security-Policy"); code != 200 || !strings.HasPrefix(csp, "sandbox allow-scripts;") || strings.Contains(csp, "allow-same-origin") || !strings.Contains(csp, "connect-src 'none'") {
		t.Errorf("render: %d %q", code, csp)
	}
	if code, _, _ = apiDo(t, "GET", s.url+"/api/artifacts/"+id+"/render", nil, "Sec-Fetch-Dest", "iframe", "Sec-Fetch-Site", "same-origin"); code != 404 {
		t.Errorf("render of markdown: %d, want 404", code)
	}

	if code, _, _ = apiDo(t, "DELETE", s.url+"/api/artifacts/"+id, nil); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	for _, path := range []string{"", "/versions", "/download"} {
		if code, _, _ = apiDo(t, "GET", s.url+"/api/artifacts/"+id+path, nil); code != 404 {
			t.Errorf("GET %s after delete: %d", path, code)
		}
	}
	if code, _, _ = apiDo(t, "PUT", s.url+"/api/artifacts/"+mine, map[string]any{"content": "x"}); code != 400 {
		t.Errorf("save without base_version: %d, want 400", code)
	}
}
