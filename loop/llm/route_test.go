package llm_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/loop/llm"
)

func TestParseRoute(t *testing.T) {
	good := []struct {
		in   string
		want llm.Route
	}{
		{"openrouter:anthropic/claude-sonnet-4", llm.Route{"openrouter", "anthropic/claude-sonnet-4"}},
		{"ollama:qwen3:8b", llm.Route{"ollama", "qwen3:8b"}},
		{" fake:echo ", llm.Route{"fake", "echo"}},
		{"fake:script:/abs/turn.yaml", llm.Route{"fake", "script:/abs/turn.yaml"}},
		{"fake:script:rel/turn.yaml", llm.Route{"fake", "script:rel/turn.yaml"}},
	}
	for _, tt := range good {
		got, err := llm.ParseRoute(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRoute(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if s := got.String(); s != strings.TrimSpace(tt.in) {
			t.Errorf("String() = %q, want %q", s, strings.TrimSpace(tt.in))
		}
	}
	bad := []string{"", "openrouter", "openrouter:", "openai:gpt-4o", "fake:nope", "fake:script:", "ollama:qwen 3"}
	for _, in := range bad {
		_, err := llm.ParseRoute(in)
		if err == nil {
			t.Errorf("ParseRoute(%q) accepted", in)
			continue
		}
		if !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("ParseRoute(%q) error %q does not quote the route", in, err)
		}
	}
}

func TestRoutesFromEnv(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "MY_AGENT_ROUTES" {
				return v
			}
			return ""
		}
	}
	got, err := llm.RoutesFromEnv(env("ollama:qwen3:8b, fake:echo,"))
	want := []llm.Route{{"ollama", "qwen3:8b"}, {"fake", "echo"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	if got, err := llm.RoutesFromEnv(env("")); got != nil || err != nil {
		t.Errorf("unset: %v, %v", got, err)
	}
	_, err = llm.RoutesFromEnv(env("fake:echo,gpt4"))
	if err == nil || !strings.Contains(err.Error(), `MY_AGENT_ROUTES: route "gpt4"`) {
		t.Errorf("error %v", err)
	}
}

func TestAvailable(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()

	usable, note := llm.NewProviders(llm.Config{OllamaHost: down.URL}).Available(t.Context())
	if len(usable) != 0 || !strings.Contains(note, "OpenRouter: no API key") || !strings.Contains(note, "Ollama at "+down.URL+": unreachable") {
		t.Errorf("nothing available: got %v, %q", usable, note)
	}

	tags := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/tags" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"models":[{"name":"qwen3:8b"},{"name":"llama3.2:latest"}]}`))
	}))
	t.Cleanup(tags.Close)
	usable, note = llm.NewProviders(llm.Config{OpenRouterAPIKey: "k", OllamaHost: tags.URL}).Available(t.Context())
	if want := []string{"openrouter", "ollama:qwen3:8b", "ollama:llama3.2:latest"}; !reflect.DeepEqual(usable, want) || note != "" {
		t.Errorf("all available: got %v, %q; want %v", usable, note, want)
	}

	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"models":[]}`)) }))
	t.Cleanup(empty.Close)
	usable, note = llm.NewProviders(llm.Config{OllamaHost: strings.TrimPrefix(empty.URL, "http://")}).Available(t.Context())
	if len(usable) != 0 || !strings.Contains(note, "no models pulled") {
		t.Errorf("Ollama without models (scheme-less host): got %v, %q", usable, note)
	}
}

func TestModelNeedsOpenRouterKey(t *testing.T) {
	_, err := llm.NewProviders(llm.Config{}).Model(llm.Route{Provider: "openrouter", Model: "x/y"})
	if !errors.Is(err, llm.ErrPermanent) || !strings.Contains(err.Error(), "OPENROUTER_API_KEY") {
		t.Errorf("error %v", err)
	}
}
