package home

import (
	"errors"
	"strings"
	"testing"
)

// FuzzAgentYAML feeds arbitrary bytes through the whole agent.yaml pipeline:
// it must never panic, and every failure must be a positioned one-line
// *ConfigError.
func FuzzAgentYAML(f *testing.F) {
	for _, seed := range []string{
		"name: x\n",
		"name: x\nmax_steps: \"ten\"\n",
		"name: x\nschedules:\n  - name: a\n    cron: '@daily'\n    prompt: hi\n",
		"name: [\n",
		"a: &x 1\nb: *x\n<<: {c: 1}\n",
		"name: x\ntelegram: {allowed_chat_ids: [.inf, 1e400]}\n",
		"? [a]\n: b\n",
		"name: x\n---\n",
	} {
		f.Add(seed)
	}
	cfg := defaultConfig()
	f.Fuzz(func(t *testing.T, data string) {
		err := decodeAgent("/h/agent.yaml", []byte(data), &cfg)
		if err == nil {
			return
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("error %T is not a *ConfigError: %v", err, err)
		}
		if ce.Line < 1 || ce.Col < 1 || strings.ContainsAny(err.Error(), "\r\n") {
			t.Fatalf("bad error %q (%d:%d)", err, ce.Line, ce.Col)
		}
	})
}

func decodeAgent(path string, data []byte, cfg *Config) error {
	a := defaultAgent()
	f, err := decodeYAML(path, data, "agent.schema.json", &a)
	if err != nil {
		return err
	}
	return checkAgent(f, &a, cfg)
}
