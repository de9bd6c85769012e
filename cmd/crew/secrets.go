package main

import (
	"io"
	"strings"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
)

// loadSecrets teaches the process's redactor (events.Secrets, R-X-6) every
// value of <home>/env and every secret-named variable of the process
// environment, before anything is appended or written.
func loadSecrets(env *cliEnv, h *home.Home) {
	var environ []string
	if env.environ != nil {
		environ = env.environ()
	}
	events.Secrets().Load(h.EnvSecrets(), environ)
	configSecrets(h)
}

// configSecrets adds what config.yaml may hold that is secret: auth_token.
func configSecrets(h *home.Home) {
	if h.Config != nil && len(h.Config.AuthToken) >= events.MinEnvFileSecret {
		events.Secrets().Add("auth_token", h.Config.AuthToken)
	}
}

// dropSecretEnv removes the secret-named variables from the server's own
// process environment once what needs them (model clients, the Telegram
// token) has read them, so nothing started later inherits or reads them.
func dropSecretEnv(env *cliEnv) {
	if env.environ == nil || env.unsetenv == nil {
		return
	}
	for _, kv := range env.environ() {
		if name, _, ok := strings.Cut(kv, "="); ok && events.SecretName(name) {
			env.unsetenv(name)
		}
	}
}

// redactedWriter redacts what the server logs (R-SEC-3: secrets are never
// logged). slog writes one whole record per Write.
type redactedWriter struct{ w io.Writer }

func (r redactedWriter) Write(p []byte) (int, error) {
	if _, err := r.w.Write(events.Secrets().Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
