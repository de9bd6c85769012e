package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Model errors, classified so the loop can decide with errors.Is: retry
// (ErrRateLimited, done by Call), fall back to the next route
// (ErrUnavailable), compact and retry (ErrContextTooLong), or give up on
// this route (ErrPermanent).
var (
	// ErrRateLimited is HTTP 429. The error carries Retry-After when the
	// server sent one (see RetryAfter).
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable is a 5xx, an overloaded provider, a connection error,
	// a timeout or a stream that broke off.
	ErrUnavailable = errors.New("provider unavailable")
	// ErrContextTooLong means the prompt does not fit the model's context.
	ErrContextTooLong = errors.New("context too long")
	// ErrPermanent is any other refusal (401, 402, 400, 404, …) and
	// configuration problems such as a missing API key: retrying the same
	// request on the same route will not help.
	ErrPermanent = errors.New("permanent model error")
	// ErrBudget is a call refused before it left because a budget would
	// be exceeded (loop/budget): no route is tried after it.
	ErrBudget = errors.New("budget reached")
)

// Error is a classified failure of one model call, HTTP or not. errors.Is
// matches its Kind (one of the sentinels above).
type Error struct {
	Kind       error
	Provider   string        // "openrouter", "ollama", "fake"
	Status     int           // HTTP status; 0 when the failure was not an HTTP reply
	Body       string        // a snippet of the reply body or the provider's message
	RetryAfter time.Duration // from the Retry-After header; 0 if absent
	Err        error         // the transport error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	b.WriteString(e.Kind.Error())
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Body != "" {
		b.WriteString(": ")
		b.WriteString(e.Body)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Unwrap exposes both the class and the transport error.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// RetryAfter reports the wait a rate-limited provider asked for.
func RetryAfter(err error) (time.Duration, bool) {
	var he *Error
	if errors.As(err, &he) && he.RetryAfter > 0 {
		return he.RetryAfter, true
	}
	return 0, false
}

// maxSnippet bounds the body text kept in an error: enough for the
// provider's message, not a whole HTML error page.
const maxSnippet = 512

// statusError classifies a non-2xx reply. body is what was read of it.
func statusError(provider string, status int, header http.Header, body []byte, now time.Time) *Error {
	msg := errorMessage(body)
	e := &Error{Provider: provider, Status: status, Body: msg, Kind: classify(status, msg)}
	if status == http.StatusTooManyRequests {
		e.RetryAfter = parseRetryAfter(header.Get("Retry-After"), now)
	}
	return e
}

// classify maps a status (0 when unknown) and the provider's message to a
// sentinel. For 4xx the message decides between ErrContextTooLong and
// ErrPermanent (context overflows come as 400, 413 or 422); "overloaded"
// means ErrUnavailable whatever the status. Status 0 (a failure inside a
// stream, a scripted error) is judged by the message alone.
func classify(status int, msg string) error {
	low := strings.ToLower(msg)
	switch {
	case status == http.StatusTooManyRequests:
		return ErrRateLimited
	case isContextTooLong(low):
		return ErrContextTooLong
	case status >= 500, status == http.StatusRequestTimeout, strings.Contains(low, "overloaded"):
		return ErrUnavailable
	case status >= 400:
		return ErrPermanent
	case strings.Contains(low, "rate limit"):
		return ErrRateLimited
	}
	return ErrUnavailable
}

var contextTooLongPhrases = []string{
	"context length", "context_length", "context window", "maximum context",
	"prompt is too long", "too many tokens", "reduce the length", "input is too long",
	"exceeds the context", "context_too_long",
}

func isContextTooLong(low string) bool {
	for _, p := range contextTooLongPhrases {
		if strings.Contains(low, p) {
			return true
		}
	}
	return false
}

// errorMessage extracts the message of an OpenAI-style error body
// ({"error":{"message":…}} or {"error":"…"}), else a trimmed snippet.
func errorMessage(body []byte) string {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && len(env.Error) > 0 {
		var s string
		if json.Unmarshal(env.Error, &s) == nil {
			return snippet(s)
		}
		var obj struct {
			Message  string          `json:"message"`
			Metadata json.RawMessage `json:"metadata"`
		}
		if json.Unmarshal(env.Error, &obj) == nil && obj.Message != "" {
			msg := obj.Message
			// OpenRouter puts the upstream provider's words in metadata.raw.
			var md struct {
				Raw string `json:"raw"`
			}
			if len(obj.Metadata) > 0 && json.Unmarshal(obj.Metadata, &md) == nil && md.Raw != "" {
				msg += " (" + md.Raw + ")"
			}
			return snippet(msg)
		}
	}
	return snippet(string(body))
}

func snippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxSnippet {
		cut := maxSnippet
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
