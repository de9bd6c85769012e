package events_test

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/nats-io/nats.go/jetstream"
)

// A secret with characters every encoder treats differently: JSON escapes
// the quote and (HTML) the angle bracket, URL escaping the rest.
const tricky = `sk-test-<a"b c/d+e&f>=1234567890`

// secretForms is every form of v the redactor must catch, as a tool or a
// model could write it.
func secretForms(v string) map[string]string {
	j, _ := json.Marshal(v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	forms := map[string]string{
		"raw":        v,
		"json":       string(j[1 : len(j)-1]),
		"json-plain": strings.TrimSuffix(b.String(), "\n")[1 : b.Len()-2],
		"query":      url.QueryEscape(v),
		"path":       url.PathEscape(v),
		"query-low":  strings.ToLower(url.QueryEscape(v)),
		"b64":        base64.StdEncoding.EncodeToString([]byte(v)),
		"b64url":     base64.URLEncoding.EncodeToString([]byte(v)),
		"b64raw":     base64.RawStdEncoding.EncodeToString([]byte(v)),
		"b64rawurl":  base64.RawURLEncoding.EncodeToString([]byte(v)),
	}
	// Inside a longer base64 text (an Authorization header) at every byte
	// alignment.
	for _, prefix := range []string{"", "u:", "us:", "use:"} {
		forms["b64-in-"+prefix] = base64.StdEncoding.EncodeToString([]byte(prefix + v + ":tail"))
	}
	// Hex and base32, also inside longer texts of theirs.
	forms["hex"] = hex.EncodeToString([]byte(v))
	forms["HEX"] = strings.ToUpper(forms["hex"])
	forms["hex-in"] = hex.EncodeToString([]byte("x" + v + "y"))
	forms["b32"] = base32.StdEncoding.EncodeToString([]byte(v))
	forms["b32raw"] = base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(v))
	forms["b32low"] = strings.ToLower(forms["b32"])
	for _, prefix := range []string{"", "a", "ab", "abc", "abcd"} {
		forms["b32-in-"+prefix] = base32.StdEncoding.EncodeToString([]byte(prefix + v + ":tail"))
		forms["b32low-in-"+prefix] = strings.ToLower(forms["b32-in-"+prefix])
	}
	return forms
}

func TestRedactorCatchesEveryForm(t *testing.T) {
	r := events.NewRedactor()
	r.Add("SOME_API_KEY", tricky)
	for name, form := range secretForms(tricky) {
		out := r.String("before " + form + " after")
		if !strings.Contains(out, "[redacted:SOME_API_KEY]") {
			t.Errorf("%s form %q: not redacted: %q", name, form, out)
		}
		for other, f := range secretForms(tricky) {
			if len(f) >= 8 && strings.Contains(out, f) && !strings.HasPrefix(other, "b64-in-") && !strings.Contains(other, "-in-") && other != "hex-in" {
				t.Errorf("%s form: %s form left in %q", name, other, out)
			}
		}
		if !strings.HasPrefix(out, "before ") || !strings.HasSuffix(out, " after") {
			t.Errorf("%s form: surrounding text changed: %q", name, out)
		}
	}
	if got := r.String("nothing secret here"); got != "nothing secret here" {
		t.Errorf("clean text changed: %q", got)
	}
}

func TestRedactorLongestSecretFirst(t *testing.T) {
	r := events.NewRedactor()
	r.Add("SHORT", "abcdefgh")
	r.Add("LONG", "abcdefgh-and-more")
	if got := r.String("x abcdefgh-and-more y abcdefgh z"); got != "x [redacted:LONG] y [redacted:SHORT] z" {
		t.Errorf("got %q", got)
	}
}

func TestRedactorLoadRules(t *testing.T) {
	r := events.NewRedactor()
	r.Load(map[string]string{"CREW_AUDIT_KEY": "0123456789abcdef", "NICKNAME": "bobby1", "LEVEL": "info"},
		[]string{"GITHUB_TOKEN=ghp_123456789", "db_password=hunter22", "PATH=/usr/local/bin:/usr/bin", "MY_KEY=short", "HOME=/home/owner"})
	for in, want := range map[string]string{
		"0123456789abcdef":        "[redacted:CREW_AUDIT_KEY]",
		"bobby1":                  "[redacted:NICKNAME]", // an env file value ≥ 6
		"info":                    "info",                // shorter: not used
		"ghp_123456789":           "[redacted:GITHUB_TOKEN]",
		"hunter22":                "[redacted:db_password]",
		"/usr/local/bin:/usr/bin": "/usr/local/bin:/usr/bin", // not a secret name
		"short":                   "short",                   // < 8
		"/home/owner":             "/home/owner",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactorJSONStaysValidAndLooksInsideNestedJSON(t *testing.T) {
	r := events.NewRedactor()
	r.Add("SOME_API_KEY", tricky)
	r.Add("PIN_TOKEN", "12345678")
	args, _ := json.Marshal(map[string]any{"command": "curl -H 'Authorization: " + tricky + "'"})
	payload, _ := json.Marshal(map[string]any{
		"text":      "key is " + tricky,
		"arguments": string(args),
		// A model may escape ordinary characters: the bytes never hold the
		// secret, the decoded text does.
		"escaped": json.RawMessage(`"\u0073k-test-\u003ca\"b c/d+e\u0026f>=1234567890"`),
		"nested":  json.RawMessage(`{"` + "deep" + `":[1,2,{"k":"x ` + strings.ReplaceAll(tricky, `"`, `\"`) + `"}]}`),
		"number":  json.RawMessage(`12345678`),
		"keep":    json.RawMessage(`{"n":1.5,"b":true,"z":null,"s":"plain"}`),
	})
	out := r.JSON(payload)
	if !json.Valid(out) {
		t.Fatalf("redacted JSON is invalid: %s", out)
	}
	// Decode every level and look for the raw value.
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if strings.Contains(v, "sk-test") || strings.Contains(v, "12345678") {
				t.Errorf("secret left in %q", v)
			}
			var inner any
			if json.Unmarshal([]byte(v), &inner) == nil {
				walk(inner)
			}
		case map[string]any:
			for k, x := range v {
				walk(k)
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var doc map[string]any
	json.Unmarshal(out, &doc)
	walk(doc)
	if !bytes.Contains(out, []byte(`{"n":1.5,"b":true,"z":null,"s":"plain"}`)) {
		t.Errorf("untouched parts changed: %s", out)
	}
	if doc["number"] != "[redacted:PIN_TOKEN]" {
		t.Errorf("number = %v", doc["number"])
	}
	clean := []byte(`{"a": "b",  "c": [1, 2]}`)
	if got := r.JSON(clean); &got[0] != &clean[0] {
		t.Errorf("clean JSON was rewritten: %s", got)
	}
}

// A secret split across streamed pieces at every position, and across
// three pieces, is never shown; what is shown adds up to the redacted text.
func TestStreamRedactorCatchesSplitSecret(t *testing.T) {
	r := events.NewRedactor()
	secret := "sk-test-streamed-secret-value-42"
	r.Add("SOME_API_KEY", secret)
	full := "Here it is: " + secret + " — done. Ünïcode ✓ " + base64.StdEncoding.EncodeToString([]byte(secret))
	want := r.String(full)
	for i := 0; i <= len(full); i++ {
		for _, j := range []int{i, min(len(full), i+3), min(len(full), i+17)} {
			s := r.Stream()
			var shown []string
			for _, piece := range []string{full[:i], full[i:j], full[j:]} {
				shown = append(shown, s.Write(piece))
			}
			shown = append(shown, s.Flush())
			got := strings.Join(shown, "")
			if got != want {
				t.Fatalf("split at %d,%d: shown %q, want %q", i, j, got, want)
			}
			for _, part := range shown {
				if strings.Contains(part, "sk-test-stre") {
					t.Fatalf("split at %d,%d: a piece shows the secret: %q", i, j, part)
				}
			}
		}
	}
	// With no secret known nothing is held back.
	if got := events.NewRedactor().Stream().Write("abc"); got != "abc" {
		t.Errorf("unknown secrets: Write = %q", got)
	}
	// A long secret known holds back only what could start it: whole
	// words are shown at once, the word being written waits.
	long := events.NewRedactor()
	long.Add("CREW_MCP_TOKEN", "K2ZBc8Ua0GJB4pGvBl7batdcraSMsSUU_u3-TgTF62w")
	s := long.Stream()
	if got := s.Write("Here is a fairly long answer, "); got != "Here is a fairly long answer, " {
		t.Errorf("after whole words: shown %q", got)
	}
	if got := s.Write("in sev"); got != "in " {
		t.Errorf("a word being written: shown %q, want only what came before it", got)
	}
	if got := s.Write("eral pieces. K2ZBc8"); got != "several pieces. " {
		t.Errorf("the start of the secret: shown %q", got)
	}
	if got := s.Write("Ua0GJB4pGvBl7batdcraSMsSUU_u3-TgTF62w!") + s.Flush(); strings.Contains(got, "K2ZB") || !strings.HasSuffix(got, "!") {
		t.Errorf("the secret's end: shown %q", got)
	}
}

// The log stores no secret: the raw JetStream block files hold the
// redacted payload (and a control marker, so the scan can fail), and
// Append returns the stored form.
func TestAppendRedactsSecrets(t *testing.T) {
	dir := t.TempDir()
	_, log := eventstest.Start(t, eventstest.WithStoreDir(dir))
	secret := "sk-test-append-" + t.Name()
	log.Redactor().Add("APPEND_TEST_KEY", secret)
	args, _ := json.Marshal(map[string]string{"command": "echo " + secret})
	stored, err := log.Append(t.Context(), events.Conv("red"), 0,
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "control-marker-visible " + secret}),
		// hex and base32 forms (xxd -p, base32(1)) are stored redacted too.
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "hex " + hex.EncodeToString([]byte(secret)) + " b32 " + base32.StdEncoding.EncodeToString([]byte(secret)) + " b32low " + strings.ToLower(base32.StdEncoding.EncodeToString([]byte("x"+secret)))}),
		events.MustNew(&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:echo", ToolCalls: []events.ToolCallRequest{{ID: "c1", Name: "shell_run", Arguments: args}}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range stored {
		if bytes.Contains(env.Data, []byte(secret)) {
			t.Errorf("Append returned the secret: %s", env.Data)
		}
	}
	e, _ := stored[0].Decode()
	if got := e.(*events.MessageReceived).Text; got != "control-marker-visible [redacted:APPEND_TEST_KEY]" {
		t.Errorf("stored text = %q", got)
	}
	info, err := log.Stream().Info(t.Context())
	if err != nil || info.Config.Compression != jetstream.NoCompression {
		t.Fatalf("stream compression = %v (%v): the raw scan below needs plain blocks", info.Config.Compression, err)
	}
	var raw []byte
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			raw = append(raw, b...)
		}
		return nil
	})
	if !bytes.Contains(raw, []byte("control-marker-visible")) {
		t.Fatal("control: the marker is not in the raw store files; the scan proves nothing")
	}
	if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte("sk-test-append")) {
		t.Error("the secret is in the raw JetStream files")
	}
	h := hex.EncodeToString([]byte(secret))
	b32 := base32.StdEncoding.EncodeToString([]byte(secret))
	for _, form := range []string{h[:24], b32[:16], strings.ToLower(base32.StdEncoding.EncodeToString([]byte("x" + secret)))[8:24]} {
		if bytes.Contains(raw, []byte(form)) {
			t.Errorf("a hex or base32 form of the secret (%s…) is in the raw JetStream files", form)
		}
	}
	if e, _ := stored[1].Decode(); e.(*events.MessageReceived).Text != "hex [redacted:APPEND_TEST_KEY] b32 [redacted:APPEND_TEST_KEY] b32low pbzwwllu[redacted:APPEND_TEST_KEY]" { // the first group mixes "x" in
		t.Errorf("stored hex/base32 text = %q", e.(*events.MessageReceived).Text)
	}
}

// base64(1) wraps at 76 columns: a long key's base64 is broken over lines
// at any offset. Every piece of 12 or more characters is caught.
func TestRedactorCatchesWrappedBase64(t *testing.T) {
	key := "sk-or-v1-" + strings.Repeat("0123456789abcdef", 4)
	r := events.NewRedactor()
	r.Add("OPENROUTER_API_KEY", key)
	for _, prefix := range []string{"", "a", "ab", "abc", "Authorization: Bearer "} {
		for _, width := range []int{76, 64, 13} {
			enc := base64.StdEncoding.EncodeToString([]byte(prefix + key + "\n"))
			var lines []string
			for i := 0; i < len(enc); i += width {
				lines = append(lines, enc[i:min(len(enc), i+width)])
			}
			out := r.String(strings.Join(lines, "\n"))
			// What is left of each line besides the marks: at most the
			// characters mixed with the prefix or the newline, and a last
			// piece shorter than 12.
			left := 0
			for _, l := range strings.Split(out, "\n") {
				left += len(strings.ReplaceAll(l, "[redacted:OPENROUTER_API_KEY]", ""))
			}
			budget := len(base64.StdEncoding.EncodeToString([]byte(prefix))) + 4 + 2*len(lines) + 11
			if !strings.Contains(out, "[redacted:OPENROUTER_API_KEY]") || left > budget {
				t.Errorf("prefix %q width %d: %d characters left (budget %d):\n%s", prefix, width, left, budget, out)
			}
		}
	}
}

// Any valid JSON stays valid after redaction, and no decoded string
// (nested JSON included) holds the secret.
func FuzzRedactJSON(f *testing.F) {
	r := events.NewRedactor()
	secret := "sk-fuzz-<&>\"secret"
	r.Add("FUZZ_KEY", secret)
	for _, seed := range []string{`{"a":"sk-fuzz-<&>\"secret"}`, `["x",1,{"k":"{\"c\":\"sk-fuzz-\\u003c\\u0026\\u003e\\\"secret\"}"}]`, `"plain"`, `12345`, `{"sk-fuzz-<&>\"secret":null}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		out := r.JSON(in)
		if !json.Valid(out) {
			t.Fatalf("redacted JSON is invalid:\nin  %s\nout %s", in, out)
		}
		var walk func(v any, depth int)
		walk = func(v any, depth int) {
			switch v := v.(type) {
			case string:
				if strings.Contains(v, secret) {
					t.Fatalf("secret left in %q (from %s)", v, in)
				}
				var inner any
				if depth < 3 && json.Unmarshal([]byte(v), &inner) == nil {
					walk(inner, depth+1)
				}
			case map[string]any:
				for k, x := range v {
					walk(k, depth)
					walk(x, depth)
				}
			case []any:
				for _, x := range v {
					walk(x, depth)
				}
			}
		}
		var doc any
		json.Unmarshal(out, &doc)
		walk(doc, 0)
	})
}

// The server's log is redacted: an error that quotes a secret is logged
// with the mark (R-SEC-3).
func TestServerLogIsRedacted(t *testing.T) {
	secret := "sk-test-logged-0123456789"
	r := events.NewRedactor()
	r.Add("LOGGED_API_KEY", secret)
	var out bytes.Buffer
	logger := slog.New(slog.NewTextHandler(r.Writer(&out), nil))
	logger.Error("model failed: key "+secret+" refused", "err", "401 for "+secret, "visible", "marker")
	if !strings.Contains(out.String(), "marker") || !strings.Contains(out.String(), "[redacted:LOGGED_API_KEY]") {
		t.Fatalf("log = %q", out.String())
	}
	if strings.Contains(out.String(), secret) {
		t.Errorf("the log holds the secret: %q", out.String())
	}
}

// Two homes in one process (two logs, as two Apps or two tests open them):
// each log redacts with its own home's secrets, and a secret one home
// knows neither redacts the other's events nor holds back its live text
// (the stream holds back only what could start one of its own home's
// secrets).
func TestTwoLogsRedactIndependently(t *testing.T) {
	_, a := eventstest.Start(t)
	_, b := eventstest.Start(t)
	if a.Redactor() == b.Redactor() {
		t.Fatal("two logs share one redactor")
	}
	secret := "sk-test-home-a-" + strings.Repeat("Zq8Xw3rT9vLp2KdN", 8)
	a.Redactor().Add("HOME_A_KEY", secret)
	for _, c := range []struct {
		name string
		log  *events.Log
		want string
	}{{"home a", a, "key [redacted:HOME_A_KEY]"}, {"home b", b, "key " + secret}} {
		stored, err := c.log.Append(t.Context(), events.Conv("two-homes"), 0,
			events.MustNew(&events.MessageReceived{Channel: "web", Text: "key " + secret}))
		if err != nil {
			t.Fatal(err)
		}
		e, _ := stored[0].Decode()
		if got := e.(*events.MessageReceived).Text; got != c.want {
			t.Errorf("%s stored %q, want %q", c.name, got, c.want)
		}
	}
	if got := b.Redactor().Stream().Write("Half a sentence, sk-test-ho"); got != "Half a sentence, sk-test-ho" {
		t.Errorf("home b's live text held back by home a's secret: shown %q", got)
	}
	if got := a.Redactor().Stream().Write("Half a sentence, sk-test-ho"); got != "Half a sentence, " {
		t.Errorf("home a's live text: shown %q, want all but the start of its secret", got)
	}
	// An own redactor handed to Open is the one the log uses.
	r := events.NewRedactor()
	r.Add("GIVEN_KEY", secret)
	srv, _ := eventstest.Start(t)
	c, err := events.Open(t.Context(), srv.Conn(), r)
	if err != nil {
		t.Fatal(err)
	}
	if c.Redactor() != r {
		t.Error("Open did not keep the redactor it was given")
	}
}
