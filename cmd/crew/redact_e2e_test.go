package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
)

// leakForms is every form of secret the scan looks for: raw, JSON-escaped
// (Go escapes & < > too), URL-encoded, base64 in both alphabets, padded and
// raw, and the base64 of the secret's aligned middle at each of the three
// byte offsets it can start at inside a longer base64 text. Written out
// here, not taken from the redactor, so the test does not grade itself.
func leakForms(secret string) map[string]string {
	forms := map[string]string{
		"raw":   secret,
		"query": url.QueryEscape(secret),
		"path":  url.PathEscape(secret),
	}
	for name, f := range map[string]string{"raw": secret, "path": forms["path"]} {
		j, _ := json.Marshal(f)
		forms[name+"-json"] = string(j[1 : len(j)-1])
	}
	for name, enc := range map[string]*base64.Encoding{"b64": base64.StdEncoding, "b64url": base64.URLEncoding} {
		forms[name] = enc.EncodeToString([]byte(secret))
		for skip := range 3 {
			mid := secret[skip:]
			mid = mid[:len(mid)/3*3]
			forms[fmt.Sprintf("%s-at-%d", name, skip)] = enc.WithPadding(base64.NoPadding).EncodeToString([]byte(mid))
		}
	}
	return forms
}

// recorder is a Bot API proxy in front of the Telegram emulator that keeps
// the raw bodies the crew sends.
type recorder struct {
	mu     sync.Mutex
	bodies bytes.Buffer
}

func (rec *recorder) handler(target *url.URL) http.Handler {
	proxy := httputil.NewSingleHostReverseProxy(target)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		fmt.Fprintf(&rec.bodies, "%s %s\n%s\n", r.Method, r.URL.Path, body)
		rec.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	})
}

func (rec *recorder) String() string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.bodies.String()
}

// startTelegramEmulator runs telegram-test-api (npm, .ci/npm) on loopback
// and returns its URL.
func startTelegramEmulator(t *testing.T) string {
	t.Helper()
	modules, _ := filepath.Abs(filepath.Join("..", "..", ".ci", "npm", "node_modules"))
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(modules, "telegram-test-api", "package.json")); serr != nil || err != nil {
		if os.Getenv("CREW_REQUIRE_PEERS") == "1" {
			t.Fatalf("telegram-test-api or node missing (%v, %v): .ci/run installs them", serr, err)
		}
		t.Skipf("telegram-test-api or node missing: npm install --prefix .ci/npm (as .ci/run does)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(node, filepath.Join("..", "..", "gateways", "telegram", "testdata", "emulator.js"), modules, strconv.Itoa(port))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-ready:
		u, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
		if !ok {
			t.Fatalf("emulator did not start: %q %s", line, stderr.String())
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("emulator not ready in 30 s: %s", stderr.String())
	}
	return ""
}

func postEmulator(t *testing.T, u string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(u, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: HTTP %d %s", u, resp.StatusCode, raw)
	}
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
}

// captureSSE reads /api/stream for a conversation into a buffer until ctx
// ends.
func captureSSE(ctx context.Context, t *testing.T, base, conv string) *lockedBuffer {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/stream?conversation="+conv, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("/api/stream = %d", resp.StatusCode)
	}
	buf := &lockedBuffer{}
	go func() {
		defer resp.Body.Close()
		io.Copy(buf, resp.Body)
	}()
	return buf
}

// Issue 10 item 3, end to end (R-X-6): a secret in <home>/env reaches the
// model's reply text, tool-call arguments, a shell tool's output (raw, URL-
// encoded and base64), a spill, memory_save, a fact, a wiki page, the live
// feed and a Telegram reply; none of it is written anywhere in any form.
// Each place scanned also holds a visible marker written next to the
// secret, so a scan that sees nothing cannot pass.
func TestSecretNeverWrittenAnywhere(t *testing.T) {
	var rnd [8]byte
	rand.Read(rnd[:])
	core := hex.EncodeToString(rnd[:])
	secret := "sk-test-" + core + "/a+b=c&d<e>"
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	query, pathEsc := url.QueryEscape(secret), url.PathEscape(secret)
	const token = "777000:emulator-token"
	const chat = int64(4242)

	emu := startTelegramEmulator(t)
	target, _ := url.Parse(emu)
	rec := &recorder{}
	proxy := httptest.NewServer(rec.handler(target))
	defer proxy.Close()

	home := initHome(t)
	// A key as long as OpenRouter's: its base64 is broken over two lines
	// by base64(1).
	long := "sk-or-v1-" + core + core + core + core
	if err := os.WriteFile(filepath.Join(home, "env"), []byte("SOME_API_KEY="+shellQuote(secret)+"\nLONG_API_KEY="+long+"\nTELEGRAM_BOT_TOKEN="+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	appendFile(t, filepath.Join(home, "config.yaml"), "telegram:\n  api_url: "+proxy.URL+"\n")
	agentYAML := filepath.Join(home, "agent.yaml")
	b, _ := os.ReadFile(agentYAML)
	os.WriteFile(agentYAML, []byte(strings.Replace(string(b), "autonomous: false", "autonomous: true", 1)+
		"tool_output_chars: 200\ntelegram:\n  allowed_chat_ids: ["+strconv.FormatInt(chat, 10)+"]\n"), 0o600)
	// A file the shell cats: the secret reaches the tool output without
	// being in the call's arguments.
	os.MkdirAll(filepath.Join(home, "workspace"), 0o755)
	planted := filepath.Join(home, "workspace", "secret.txt")
	os.WriteFile(planted, []byte("visible-marker-cat "+secret+"\n"), 0o600)
	plantedLong := filepath.Join(home, "workspace", "long.txt")
	os.WriteFile(plantedLong, []byte(long), 0o600)

	args := func(v map[string]any) string { b, _ := json.Marshal(v); return jsonText(string(b)) }
	script := writeScript(t, `
- delay: 1500ms
  tool_calls:
    - name: shell_run
      arguments: `+args(map[string]any{"command": "cat secret.txt; echo 'visible-marker-shell " + secret + "'; printf %s '" + secret + "' | base64; echo '" + query + "'; base64 long.txt; seq 1 100"})+`
- tool_calls:
    - name: memory_save
      arguments: `+args(map[string]any{"text": "visible-marker-memory " + secret + " b64 " + b64 + " url " + query})+`
    - name: user_memory_save
      arguments: `+args(map[string]any{"name": "keys", "text": "visible-marker-fact " + secret})+`
    - name: wiki_apply
      arguments: `+args(map[string]any{"page": "keys", "content": "visible-marker-wiki " + secret + " " + pathEsc})+`
- delay: 300ms
  text: `+jsonText("visible-marker-reply here it is: "+secret+", base64 "+b64+", path "+pathEsc)+`
- text: `+jsonText("visible-marker-telegram "+secret+" "+b64)+`
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)

	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "visible-marker-owner show me the key"})
	id := acc["conversation_id"].(string)
	sseCtx, stopSSE := context.WithCancel(t.Context())
	sse := captureSSE(sseCtx, t, s.url, id)
	c := waitConv(t, s.url, id, "the web turn", settled)
	if last := c.History[len(c.History)-1].Text; !strings.Contains(last, "visible-marker-reply") || !strings.Contains(last, "[redacted:SOME_API_KEY]") {
		t.Errorf("last reply = %q, want the marker and the redaction mark", last)
	}

	user := map[string]any{
		"botToken": token, "date": time.Now().Unix(), "text": "visible-marker-tg-owner and on telegram?",
		"from": map[string]any{"id": chat, "first_name": "Owner", "username": "owner", "is_bot": false},
		"chat": map[string]any{"id": chat, "first_name": "Owner", "type": "private"},
	}
	postEmulator(t, emu+"/sendMessage", user, nil)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(rec.String(), "visible-marker-telegram"); {
		if time.Now().After(deadline) {
			t.Fatalf("no Telegram reply within 30 s; sent:\n%s\n%s", rec.String(), s.stderr)
		}
		time.Sleep(50 * time.Millisecond) // polling an external process
	}

	// What the emulator stored, besides the raw bodies it was sent. The
	// proxy records a body as it forwards it, before the emulator has
	// stored it: read the history until the reply is in it.
	var history json.RawMessage
	for deadline := time.Now().Add(30 * time.Second); ; {
		postEmulator(t, emu+"/getUpdatesHistory", map[string]any{"token": token}, &history)
		if strings.Contains(string(history), "visible-marker-telegram") || time.Now().After(deadline) {
			break // the control below says so when it never came
		}
		time.Sleep(50 * time.Millisecond) // polling an external process
	}

	export, errOut, code := crew(t, home, "export", id)
	if code != 0 || !strings.Contains(export, "visible-marker-reply") {
		t.Fatalf("crew export = %d %s", code, errOut)
	}
	var pages strings.Builder
	for _, p := range []string{"/c/" + id, "/c/" + id + "/runs", "/api/conversations/" + id, "/api/conversations/" + id + "/runs"} {
		resp, err := http.Get(s.url + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		pages.Write(body)
	}
	stopSSE()
	s.stop(t)

	// The raw bytes of everything the server wrote under the home (the
	// JetStream blocks (the spills' object store's too), projections.db, memory/, the facts, the
	// wiki), except the env file and the planted file.
	var disk, blocks bytes.Buffer
	var spilled bool
	filepath.Walk(home, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || p == filepath.Join(home, "env") || p == planted || p == plantedLong {
			return nil
		}
		if strings.Contains(p, string(filepath.Separator)+"OBJ_"+events.SpillBucket+string(filepath.Separator)) && strings.HasSuffix(p, ".blk") {
			spilled = true // the spills' object store, in the embedded server's files
		}
		b, _ := os.ReadFile(p)
		if strings.HasPrefix(p, filepath.Join(home, "data", "nats")) {
			blocks.Write(b)
		}
		fmt.Fprintf(&disk, "== %s\n", p)
		disk.Write(b)
		return nil
	})
	// The memory tools wrote their files, redacted.
	notes, _ := filepath.Glob(filepath.Join(home, "memory", "*.md"))
	if len(notes) != 1 {
		t.Fatalf("daily notes = %v, want today's", notes)
	}
	for _, f := range []struct{ path, marker string }{
		{notes[0], "visible-marker-memory"},
		{filepath.Join(home, "users", "owner", "facts", "keys.md"), "visible-marker-fact"},
		{filepath.Join(home, "wiki", "keys.md"), "visible-marker-wiki"},
	} {
		if b, err := os.ReadFile(f.path); err != nil || !strings.Contains(string(b), f.marker+" [redacted:SOME_API_KEY]") {
			t.Errorf("control: %s = %q, %v; want the marker and the redaction mark", f.path, b, err)
		}
	}
	// The JetStream blocks are plain (the stream has no compression), so
	// the marker stored next to the secret is readable in them.
	if !strings.Contains(blocks.String(), "visible-marker-owner") || !strings.Contains(blocks.String(), "visible-marker-shell") {
		t.Error("control: the markers are not in the raw JetStream files; their scan proves nothing")
	}
	if !spilled {
		t.Error("control: the shell output was not spilled; the spill was not exercised")
	}
	places := map[string]struct {
		text    string
		markers []string
	}{
		"files under the home": {disk.String(), []string{"visible-marker-owner", "visible-marker-shell", "visible-marker-cat", "visible-marker-memory", "visible-marker-fact", "visible-marker-wiki", "visible-marker-reply", "visible-marker-telegram"}},
		"export":               {export, []string{"visible-marker-shell", "visible-marker-memory", "visible-marker-reply"}},
		"SSE capture":          {sse.String(), []string{"event: delta", "visible-marker-reply", "visible-marker-shell"}},
		// A secret split across delta frames is whole again once the
		// pieces are joined, as the page joins them.
		"live deltas joined": {joinDeltas(sse.String()), []string{"visible-marker-reply", "visible-marker-shell", "visible-marker-memory"}},
		"Telegram bodies":    {rec.String(), []string{"sendMessage", "visible-marker-telegram"}},
		"Telegram emulator":  {string(history), []string{"visible-marker-telegram", "visible-marker-tg-owner"}},
		"pages and API":      {pages.String(), []string{"visible-marker-reply", "visible-marker-cat"}},
		"server output":      {s.stdout.String() + s.stderr.String(), []string{"crew is serving on"}},
	}
	for _, f := range []string{"data/projections.db", "memory", "data/nats/jetstream/$G/streams/OBJ_" + events.SpillBucket} {
		if !strings.Contains(disk.String(), filepath.Join(home, f)) {
			t.Errorf("control: nothing under %s was scanned", f)
		}
	}
	for place, p := range places {
		for _, m := range p.markers {
			if !strings.Contains(p.text, m) {
				t.Errorf("control: %s lacks %q, so its scan proves nothing", place, m)
			}
		}
		for form, leak := range leakForms(secret) {
			if n := strings.Count(p.text, leak); n > 0 {
				i := strings.Index(p.text, leak)
				t.Errorf("%s holds the secret (%s form) %d times, e.g. …%s…", place, form, n, p.text[max(0, i-80):min(len(p.text), i+len(leak)+20)])
			}
		}
		for _, piece := range base64Pieces(long, 16) {
			if strings.Contains(p.text, piece) {
				i := strings.Index(p.text, piece)
				t.Errorf("%s holds a piece of the long key's base64: …%s…", place, p.text[max(0, i-40):min(len(p.text), i+56)])
				break
			}
		}
		if strings.Contains(p.text, core) {
			i := strings.Index(p.text, core)
			t.Errorf("%s holds the secret's random core: …%s…", place, p.text[max(0, i-80):min(len(p.text), i+80)])
		}
	}
	if !strings.Contains(disk.String(), "[redacted:SOME_API_KEY]") {
		t.Error("control: no redaction mark on disk")
	}
}

// base64Pieces is every n-character piece of v's base64, at each of the
// three byte alignments v can have inside a longer text, both alphabets.
func base64Pieces(v string, n int) []string {
	var out []string
	for skip := range 3 {
		mid := v[skip:]
		mid = mid[:len(mid)/3*3]
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			e := enc.EncodeToString([]byte(mid))
			for i := 0; i+n <= len(e); i++ {
				out = append(out, e[i:i+n])
			}
		}
	}
	return out
}

// joinDeltas joins the text and the tool-call arguments of the "delta"
// frames of an SSE capture, each stream on its own line.
func joinDeltas(capture string) string {
	var text strings.Builder
	args := map[int]*strings.Builder{}
	var order []int
	frames := strings.Split(capture, "\n\n")
	for _, f := range frames {
		body, ok := strings.CutPrefix(f, "event: delta\ndata: ")
		if !ok {
			continue
		}
		var d struct {
			Delta struct {
				Text           string `json:"text"`
				Index          int    `json:"tool_call_index"`
				ArgumentsDelta string `json:"arguments_delta"`
			} `json:"delta"`
		}
		if json.Unmarshal([]byte(body), &d) != nil {
			continue
		}
		text.WriteString(d.Delta.Text)
		if d.Delta.ArgumentsDelta != "" {
			if args[d.Delta.Index] == nil {
				args[d.Delta.Index] = &strings.Builder{}
				order = append(order, d.Delta.Index)
			}
			args[d.Delta.Index].WriteString(d.Delta.ArgumentsDelta)
		}
	}
	out := text.String()
	for _, i := range order {
		out += "\n" + args[i].String()
	}
	return out
}

// shellQuote writes v as a double-quoted env file value.
func shellQuote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// A secret added to <home>/env while the server runs is redacted once the
// crew reloads (R-X-6 with R-HOME-4).
func TestEnvReloadRedactsNewSecrets(t *testing.T) {
	home := initHome(t)
	s := startServe(t, home)
	secret := "sk-test-reloaded-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	appendFile(t, filepath.Join(home, "env"), "NEW_API_KEY="+secret+"\n")
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(s.stderr.String(), "crew reloaded"); {
		if time.Now().After(deadline) {
			t.Fatalf("no reload within 30 s\n%s", s.stderr)
		}
		time.Sleep(50 * time.Millisecond) // polling an external process
	}
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "visible-marker " + secret})
	c := waitConv(t, s.url, acc["conversation_id"].(string), "the echo", settled)
	s.stop(t)
	if got := c.History[len(c.History)-1].Text; got != "echo: visible-marker [redacted:NEW_API_KEY]" {
		t.Errorf("reply = %q", got)
	}
	var raw bytes.Buffer
	filepath.Walk(filepath.Join(home, "data"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			raw.Write(b)
		}
		return nil
	})
	if !strings.Contains(raw.String(), "visible-marker") {
		t.Fatal("control: the marker is not in data/")
	}
	if strings.Contains(raw.String(), secret) {
		t.Error("the new secret is in data/")
	}
}
