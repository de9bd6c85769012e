package events

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Minimum lengths of the values a Redactor is loaded with (R-X-6). A value
// of <home>/env is a secret by where it lives, so shorter ones count too;
// 6 keeps out flags such as "true" or "info" that would redact ordinary
// words. A process variable is a secret only by its name, so it needs 8.
const (
	MinEnvFileSecret = 6
	MinProcessSecret = 8
)

// Redactor replaces known secret values with "[redacted:NAME]" (R-X-6): the
// raw value and the forms a tool or a model turns it into — JSON-escaped
// (with and without HTML escaping), URL-encoded (query and path escaping,
// upper- and lower-case hex), base64 (standard and URL alphabets, padded
// and raw, also as part of a longer base64 text at any byte alignment), hex
// (either case) and base32 (padded and raw, either case, also inside a
// longer base32 text).
// Longer forms are matched first. Secrets are only ever added: a value
// once known stays redacted for the life of the Redactor.
//
// A Redactor is a value of one home, owned by its log (Open, Log.Redactor):
// the log applies it to every appended event, the loop to the live deltas
// and tool results, the Telegram gateway to every request it sends and
// tools.WriteAtomic to every file written for an agent. Two logs in one
// process redact independently. A nil *Redactor knows no secret.
type Redactor struct {
	mu  sync.Mutex // serialises Add
	set atomic.Pointer[secretSet]
}

type secretSet struct {
	forms  []secretForm // longest first
	maxLen int
	names  map[string]string // value → name
	// windows maps every b64Window-long piece of a secret's base64 (at
	// each alignment, both alphabets) to its mark, so base64 broken over
	// lines (base64(1) wraps at 76) is caught piece by piece.
	windows map[string]string
}

type secretForm struct{ text, mark string }

// noSecrets is what a nil Redactor knows: nothing. It is never written.
var noSecrets = &secretSet{names: map[string]string{}}

// secrets is the set r knows now.
func (r *Redactor) secrets() *secretSet {
	if r == nil {
		return noSecrets
	}
	return r.set.Load()
}

// Writer redacts what is written through it to w (R-SEC-3: secrets are
// never logged). It suits a writer given one whole record per Write, as
// slog's handlers do.
func (r *Redactor) Writer(w io.Writer) io.Writer { return redactedWriter{r, w} }

type redactedWriter struct {
	r *Redactor
	w io.Writer
}

func (rw redactedWriter) Write(p []byte) (int, error) {
	if _, err := rw.w.Write(rw.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// NewRedactor returns a Redactor that knows no secret yet.
func NewRedactor() *Redactor {
	r := &Redactor{}
	r.set.Store(&secretSet{names: map[string]string{}})
	return r
}

// SecretName reports whether a variable name says it holds a secret: it
// contains KEY, TOKEN, SECRET or PASSWORD, in any case.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	return strings.Contains(n, "KEY") || strings.Contains(n, "TOKEN") ||
		strings.Contains(n, "SECRET") || strings.Contains(n, "PASSWORD")
}

// Load adds every value of envFile (the <home>/env file) at least
// MinEnvFileSecret long and every secret-named variable of environ
// (KEY=VALUE, as os.Environ) at least MinProcessSecret long.
func (r *Redactor) Load(envFile map[string]string, environ []string) {
	for name, v := range envFile {
		if len(v) >= MinEnvFileSecret {
			r.Add(name, v)
		}
	}
	for _, kv := range environ {
		name, v, ok := strings.Cut(kv, "=")
		if ok && SecretName(name) && len(v) >= MinProcessSecret {
			r.Add(name, v)
		}
	}
}

// Add makes value a secret shown as [redacted:name]. An empty value is
// ignored; a value already known keeps its first name.
func (r *Redactor) Add(name, value string) {
	if value == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.set.Load()
	if _, ok := old.names[value]; ok {
		return
	}
	next := &secretSet{names: make(map[string]string, len(old.names)+1), windows: map[string]string{}}
	for v, n := range old.names {
		next.names[v] = n
	}
	next.names[value] = markName(name)
	// Longest value first, so a form two secrets share (a piece of their
	// base64) is always named after the same one.
	values := make([]string, 0, len(next.names))
	for v := range next.names {
		values = append(values, v)
	}
	sort.Slice(values, func(i, j int) bool {
		if len(values[i]) != len(values[j]) {
			return len(values[i]) > len(values[j])
		}
		return values[i] < values[j]
	})
	have := map[string]bool{}
	for _, v := range values {
		mark := "[redacted:" + next.names[v] + "]"
		for _, f := range formsOf(v) {
			if !have[f] {
				have[f] = true
				next.forms = append(next.forms, secretForm{text: f, mark: mark})
			}
		}
		for _, core := range base64Cores(v) {
			for i := 0; i+b64Window <= len(core); i++ {
				if _, ok := next.windows[core[i:i+b64Window]]; !ok {
					next.windows[core[i:i+b64Window]] = mark
				}
			}
		}
	}
	sort.Slice(next.forms, func(i, j int) bool {
		a, b := next.forms[i].text, next.forms[j].text
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	if len(next.forms) > 0 {
		next.maxLen = len(next.forms[0].text)
	}
	r.set.Store(next)
}

// markName keeps a name to the characters that need no escaping anywhere
// the mark is written (JSON, URLs, Markdown).
func markName(name string) string {
	var b strings.Builder
	for _, c := range name {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "SECRET"
	}
	return b.String()
}

// minBase64Core is the shortest piece of a longer base64 text that is
// taken as a secret's: 8 characters, 6 bytes of the secret.
const minBase64Core = 8

// formsOf lists the texts a value is recognised by.
func formsOf(v string) []string {
	forms := []string{v}
	for _, e := range []string{url.QueryEscape(v), url.PathEscape(v)} {
		forms = append(forms, e, lowerHex(e))
	}
	// Each of these as it reads inside a JSON string (the path form keeps
	// "&", which Go's encoder writes as \u0026).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, f := range forms[:len(forms):len(forms)] {
		for _, html := range []bool{true, false} {
			b.Reset()
			enc.SetEscapeHTML(html)
			if enc.Encode(f) == nil {
				s := strings.TrimSuffix(b.String(), "\n")
				forms = append(forms, s[1:len(s)-1])
			}
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(v)))
	}
	for _, core := range base64Cores(v) {
		if len(core) >= minBase64Core {
			forms = append(forms, core)
		}
	}
	// Hex (xxd -p, od, a program's %x) in either case: byte-aligned, so the
	// secret's piece of a longer hex text is this text itself.
	h := hex.EncodeToString([]byte(v))
	forms = append(forms, h, strings.ToUpper(h))
	// Base32 (base32(1), TOTP seeds, some key formats): padded and raw, in
	// either case, and the secret's piece of a longer base32 text at any
	// byte offset.
	for _, enc := range []*base32.Encoding{base32.StdEncoding, base32.StdEncoding.WithPadding(base32.NoPadding)} {
		e := enc.EncodeToString([]byte(v))
		forms = append(forms, e, strings.ToLower(e))
	}
	for _, core := range base32Cores(v) {
		if len(core) >= minBase64Core {
			forms = append(forms, core, strings.ToLower(core))
		}
	}
	return forms
}

// base32Cores: as base64Cores, for base32's 5-byte groups.
func base32Cores(v string) []string {
	var out []string
	raw := base32.StdEncoding.WithPadding(base32.NoPadding)
	for skip := 0; skip < 5 && skip < len(v); skip++ {
		rest := v[skip:]
		rest = rest[:len(rest)/5*5]
		out = append(out, raw.EncodeToString([]byte(rest)))
	}
	return out
}

// base64Cores: inside a longer base64 text the secret starts at any byte
// of a 3-byte group; the characters that depend on its bytes alone are the
// encoding of its whole groups from the first group boundary on.
func base64Cores(v string) []string {
	var out []string
	for skip := 0; skip < 3 && skip < len(v); skip++ {
		rest := v[skip:]
		rest = rest[:len(rest)/3*3]
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString([]byte(rest)))
		}
	}
	return out
}

// b64Window is the shortest piece of a secret's base64 caught on its own:
// 12 characters, 9 bytes of the secret.
const b64Window = 12

func isBase64Char(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

// lowerHex writes the %XX escapes of s in lower case, as some encoders do.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lower(b[i+1]), lower(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Empty reports whether no secret is known.
func (r *Redactor) Empty() bool { return len(r.secrets().forms) == 0 }

// String returns s with every known secret form replaced.
func (r *Redactor) String(s string) string { return r.secrets().str(s) }

// Bytes is String for bytes; b itself is returned when nothing matched.
func (r *Redactor) Bytes(b []byte) []byte {
	set := r.secrets()
	if len(set.forms) == 0 {
		return b
	}
	spans := set.spans(string(b))
	if len(spans) == 0 {
		return b
	}
	return []byte(replaceSpans(string(b), spans))
}

// JSON redacts one JSON value: every string (keys too) and number is
// redacted after decoding, and a string that itself holds JSON (tool-call
// arguments) is redacted as JSON, so escapes such as \u0073 hide nothing.
// Valid JSON stays valid; when nothing matched, b itself is returned.
// Invalid JSON is redacted as text.
func (r *Redactor) JSON(b []byte) []byte {
	set := r.secrets()
	if len(set.forms) == 0 {
		return b
	}
	// Without escapes the decoded strings are the bytes as they stand: no
	// match in the bytes is no match anywhere (the common case, no decode).
	if bytes.IndexByte(b, '\\') < 0 && len(set.spans(string(b))) == 0 {
		return b
	}
	out, changed, err := set.json(b, 0)
	if err != nil {
		return r.Bytes(b)
	}
	if !changed {
		return b
	}
	return out
}

// maxNested is how deep JSON held in JSON strings is looked into.
const maxNested = 3

func (s *secretSet) json(b []byte, depth int) ([]byte, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		obj bool
		n   int // values (and keys) written in this container
	}
	var (
		out     bytes.Buffer
		stack   []frame
		changed bool
		values  int
	)
	out.Grow(len(b))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			out.WriteByte(byte(d))
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				stack[len(stack)-1].n++
			}
			continue
		}
		if len(stack) == 0 {
			if values++; values > 1 {
				return nil, false, errors.New("more than one JSON value")
			}
		} else if f := stack[len(stack)-1]; f.obj && f.n%2 == 1 {
			out.WriteByte(':')
		} else if f.n > 0 {
			out.WriteByte(',')
		}
		switch v := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(v))
			stack = append(stack, frame{obj: v == '{'})
			continue
		case string:
			red := s.jsonString(v, depth)
			changed = changed || red != v
			writeJSONString(&out, red)
		case json.Number:
			if red := s.str(string(v)); red != string(v) {
				changed = true
				writeJSONString(&out, red)
			} else {
				out.WriteString(string(v))
			}
		case bool:
			if v {
				out.WriteString("true")
			} else {
				out.WriteString("false")
			}
		case nil:
			out.WriteString("null")
		}
		if len(stack) > 0 {
			stack[len(stack)-1].n++
		}
	}
	if values == 0 || len(stack) > 0 {
		return nil, false, errors.New("not one JSON value")
	}
	return out.Bytes(), changed, nil
}

// jsonString redacts a decoded string; one holding JSON is redacted as JSON.
func (s *secretSet) jsonString(v string, depth int) string {
	t := strings.TrimSpace(v)
	if depth < maxNested && len(t) >= 2 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		if out, changed, err := s.json([]byte(v), depth+1); err == nil {
			if !changed {
				return v
			}
			return string(out)
		}
	}
	return s.str(v)
}

func writeJSONString(out *bytes.Buffer, s string) {
	b, _ := json.Marshal(s)
	out.Write(b)
}

func (s *secretSet) str(text string) string {
	if len(s.forms) == 0 {
		return text
	}
	spans := s.spans(text)
	if len(spans) == 0 {
		return text
	}
	return replaceSpans(text, spans)
}

type span struct {
	start, end int
	mark       string
}

// spans finds the secret forms in text, longest first, not overlapping,
// sorted by position.
func (s *secretSet) spans(text string) []span {
	var out []span
	for _, f := range s.forms {
		if len(f.text) > len(text) {
			continue
		}
		for off := 0; off <= len(text)-len(f.text); {
			i := strings.Index(text[off:], f.text)
			if i < 0 {
				break
			}
			start, end := off+i, off+i+len(f.text)
			if overlaps(out, start, end) {
				off = start + 1
				continue
			}
			out = append(out, span{start, end, f.mark})
			off = end
		}
	}
	if len(s.windows) > 0 {
		out = s.windowSpans(text, out)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// windowSpans adds the runs of base64 characters made of pieces of a
// secret's base64, outside the spans already found.
func (s *secretSet) windowSpans(text string, out []span) []span {
	found := len(out)
	for i := 0; i < len(text); {
		if !isBase64Char(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isBase64Char(text[j]) {
			j++
		}
		cur := -1 // the span the last hit went to
		for k := i; k+b64Window <= j; k++ {
			mark, ok := s.windows[text[k:k+b64Window]]
			if !ok || overlaps(out[:found], k, k+b64Window) {
				continue
			}
			if cur >= 0 && k <= out[cur].end {
				out[cur].end = k + b64Window
				continue
			}
			out = append(out, span{k, k + b64Window, mark})
			cur = len(out) - 1
		}
		i = j
	}
	return out
}

func overlaps(spans []span, start, end int) bool {
	for _, sp := range spans {
		if start < sp.end && sp.start < end {
			return true
		}
	}
	return false
}

func replaceSpans(text string, spans []span) string {
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		b.WriteString(text[at:sp.start])
		b.WriteString(sp.mark)
		at = sp.end
	}
	b.WriteString(text[at:])
	return b.String()
}

// StreamRedactor redacts a text that arrives in pieces (a model's reply as it
// streams): a secret split across pieces is still caught, because the
// tail that could be the start of one is held back until the next piece
// or Flush — only that tail, so a known long secret does not delay the
// live text by its length. Not safe for concurrent use.
type StreamRedactor struct {
	r    *Redactor
	held string
}

// Stream starts a streamed text.
func (r *Redactor) Stream() *StreamRedactor { return &StreamRedactor{r: r} }

// Write takes the next piece and returns what can be shown of the text so
// far, redacted; the rest is held.
func (s *StreamRedactor) Write(piece string) string {
	set := s.r.secrets()
	text := s.held + piece
	if len(set.forms) == 0 {
		s.held = ""
		return text
	}
	spans := set.spans(text)
	cut := set.heldFrom(text)
	for moved := true; moved && cut < len(text); {
		moved = false
		for _, sp := range spans {
			if sp.start < cut && cut < sp.end {
				cut, moved = sp.end, true
			}
		}
		for cut < len(text) && !utf8.RuneStart(text[cut]) {
			cut, moved = cut+1, true
		}
	}
	var shown []span
	for _, sp := range spans {
		if sp.end <= cut {
			shown = append(shown, sp)
		}
	}
	s.held = text[cut:]
	return replaceSpans(text[:cut], shown)
}

// heldFrom is where the tail that could still grow into a secret starts:
// the first of the last maxLen-1 bytes from which the rest is the start
// of a secret's form, or, when base64 pieces are caught, the trailing run
// of base64 characters (the word being written). Only that much waits for
// the next piece; the rest of the text is shown at once.
func (set *secretSet) heldFrom(text string) int {
	from := max(0, len(text)-(set.maxLen-1))
	hold := len(text)
	if len(set.windows) > 0 {
		for hold > from && isBase64Char(text[hold-1]) {
			hold--
		}
	}
	for p := from; p < hold; p++ {
		tail := text[p:]
		for _, f := range set.forms {
			if len(f.text) > len(tail) && strings.HasPrefix(f.text, tail) {
				return p
			}
		}
	}
	return hold
}

// Flush returns the held tail, redacted, and ends the text.
func (s *StreamRedactor) Flush() string {
	out := s.r.String(s.held)
	s.held = ""
	return out
}
