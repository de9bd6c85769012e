package home

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
)

// The secrets serve needs are settled before anything else starts: the
// audit key and, for a non-loopback listen, the auth token are written to
// <home>/env first, so everything built from the env file afterwards (the
// redactor among them) knows them. Neither is ever printed or logged.

// LoadSecrets teaches r, the redactor the home's log is opened with
// (R-X-6), every value of <home>/env and every secret-named variable of the
// process environment (environ lists it; nil in process tests, whose
// environment is the test's own), before anything is appended or written.
func (h *Home) LoadSecrets(r *events.Redactor, environ func() []string) {
	var vars []string
	if environ != nil {
		vars = environ()
	}
	r.Load(h.EnvSecrets(), vars)
	h.ConfigSecrets(r)
}

// ConfigSecrets adds to r what config.yaml may hold that is secret:
// auth_token and MCP header and env values written in it.
func (h *Home) ConfigSecrets(r *events.Redactor) {
	if h.Config != nil && len(h.Config.AuthToken) >= events.MinEnvFileSecret {
		r.Add("auth_token", h.Config.AuthToken)
	}
	// An MCP header written into config.yaml itself (not as ${VAR}) is a
	// credential too.
	if h.Config == nil {
		return
	}
	for name, srv := range h.Config.MCPServers {
		for k, v := range srv.Headers {
			if !strings.Contains(v, "${") && len(v) >= events.MinEnvFileSecret {
				r.Add("mcp_servers."+name+".headers."+k, v)
			}
		}
		for k, v := range srv.Env {
			if !strings.Contains(v, "${") && len(v) >= events.MinEnvFileSecret {
				r.Add("mcp_servers."+name+".env."+k, v)
			}
		}
	}
}

// DropSecretEnv removes the secret-named variables from the server's own
// process environment (environ lists it, unsetenv removes one; both nil in
// process tests) once what needs them (model clients, the Telegram token)
// has read them, so nothing started later inherits or reads them.
func DropSecretEnv(environ func() []string, unsetenv func(string) error) {
	if environ == nil || unsetenv == nil {
		return
	}
	for _, kv := range environ() {
		if name, _, ok := strings.Cut(kv, "="); ok && events.SecretName(name) {
			unsetenv(name)
		}
	}
}

// SecretSource names where a secret came from, for error messages.
func (h *Home) SecretSource(name string, getenv func(string) string) string {
	if getenv != nil && getenv(name) != "" {
		return name + " in the process environment"
	}
	return name + " in " + filepath.Join(h.Dir, "env")
}

// AuditKey returns the home's audit key, creating it in <home>/env when
// there is none (a home made before keyed exports); a created key is added
// to r.
func (h *Home) AuditKey(r *events.Redactor, getenv func(string) string) ([]byte, error) {
	if v := h.Getenv(AuditKeyVar, getenv); v != "" {
		if len(v) < events.MinAuditKey {
			return nil, fmt.Errorf("%s is %d bytes: want at least %d random bytes (delete the line and crew serve writes a new one)", h.SecretSource(AuditKeyVar, getenv), len(v), events.MinAuditKey)
		}
		return []byte(v), nil
	}
	v, _, err := EnsureEnvSecret(h.Dir, AuditKeyVar, "audit key of this home: keys the hash chain of crew export (crew verify proves a file came from here)", NewSecret)
	if err != nil {
		return nil, fmt.Errorf("create the audit key: %w", err)
	}
	h.Env[AuditKeyVar] = v
	r.Add(AuditKeyVar, v) // LoadSecrets taught the redactor the file before this line was in it
	return []byte(v), nil
}

// AuthToken is the auth token and where it came from ("" if none).
func (h *Home) AuthToken(getenv func(string) string) (token, source string) {
	if h.Config.AuthToken != "" {
		return h.Config.AuthToken, "auth_token in " + filepath.Join(h.Dir, "config.yaml")
	}
	if v := h.Getenv(AuthTokenVar, getenv); v != "" {
		return v, h.SecretSource(AuthTokenVar, getenv)
	}
	return "", ""
}

// ServeAuth settles the web UI's and API's token for a server listening
// on addr: a token set anywhere must be strong; a non-loopback address
// without one gets a generated CREW_AUTH_TOKEN in <home>/env (generated
// true); web.hosts needs a token. A generated token is added to r. The
// CREW_AUTH_TOKEN serve made for /mcp (MCPToken) is no web token on a
// loopback listen without web.hosts: "" is returned, and the loopback UI
// asks no login as before. The token returned, wherever it came from, is
// added to r, and a non-loopback addr is refused without one (CheckListen).
func (h *Home) ServeAuth(r *events.Redactor, addr string, getenv func(string) string) (token string, generated bool, err error) {
	loopback, err := IsLoopback(addr)
	if err != nil {
		return "", false, err
	}
	token, source := h.AuthToken(getenv)
	if token != "" {
		if err := web.CheckToken(token); err != nil {
			return "", false, fmt.Errorf("the auth token (%s) %v", source, err)
		}
	}
	if err := h.checkConfigMode(); err != nil {
		return "", false, err
	}
	if token == "" && !loopback {
		token, _, err = EnsureEnvSecret(h.Dir, AuthTokenVar, "auth token of the web UI and API (crew serve generated it for a non-loopback listen)", web.GenerateToken)
		if err != nil {
			return "", false, fmt.Errorf("generate an auth token: %w", err)
		}
		h.Env[AuthTokenVar] = token
		r.Add(AuthTokenVar, token)
		generated = true
	}
	if token != "" && h.madeForMCP(token) {
		r.Add(AuthTokenVar, token)
		if loopback && len(h.Config.Web.Hosts) == 0 {
			token = "" // made for /mcp: the loopback web UI stays without login
		} else {
			// The token serve made for /mcp turns login on here: say where
			// it is and where to log in, as for a token made for this listen.
			generated = true
		}
	}
	if token == "" && len(h.Config.Web.Hosts) > 0 {
		return "", false, fmt.Errorf("web.hosts in %s names %v, but no auth token is set: other names need one (CREW_AUTH_TOKEN in %s; crew serve --listen on a non-loopback address generates it)",
			filepath.Join(h.Dir, "config.yaml"), h.Config.Web.Hosts, filepath.Join(h.Dir, "env"))
	}
	if token != "" {
		r.Add(AuthTokenVar, token)
	}
	return token, generated, CheckListen(addr, token)
}

// checkConfigMode refuses a config.yaml that holds a secret (auth_token)
// while others can read it, as Load refuses such an env file.
func (h *Home) checkConfigMode() error {
	var holds []string
	if h.Config.AuthToken != "" {
		holds = append(holds, "auth_token")
	}
	if len(holds) == 0 {
		return nil
	}
	cfg := filepath.Join(h.Dir, "config.yaml")
	fi, err := os.Stat(cfg)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	sort.Strings(holds)
	return fmt.Errorf("%s holds %s and is mode %04o, readable by others: run chmod 600 %s (or keep secrets in %s)",
		cfg, strings.Join(holds, ", "), fi.Mode().Perm(), cfg, filepath.Join(h.Dir, "env"))
}

// mcpTokenMark is where serve notes which CREW_AUTH_TOKEN it generated
// for /mcp (a SHA-256 of it, never the token): that one token does not by
// itself turn on login for a loopback web UI, as a token the owner set
// does.
const mcpTokenMark = "data/auth-token-for-mcp"

// legacyMCPTokenVar is the /mcp token of homes served before /mcp took
// CREW_AUTH_TOKEN; its value becomes CREW_AUTH_TOKEN, so clients set up
// with it go on working.
const legacyMCPTokenVar = "CREW_MCP_TOKEN"

// MCPToken is the bearer token /mcp requires, always, loopback too: the
// home's auth token (CREW_AUTH_TOKEN, auth_token of config.yaml), else a
// CREW_AUTH_TOKEN generated into <home>/env and marked as made for /mcp
// (create false: only read it, "" when there is none).
func (h *Home) MCPToken(getenv func(string) string, create bool) (string, error) {
	if t, _ := h.AuthToken(getenv); t != "" || !create {
		return t, nil
	}
	v := h.Getenv(legacyMCPTokenVar, getenv)
	if web.CheckToken(v) != nil {
		v = web.GenerateToken()
	}
	if err := os.MkdirAll(filepath.Join(h.Dir, "data"), 0o700); err != nil {
		return "", err
	}
	if err := WriteFileAtomic(filepath.Join(h.Dir, mcpTokenMark), []byte(tokenMark(v)+"\n"), 0o600); err != nil {
		return "", err
	}
	t, _, err := EnsureEnvSecret(h.Dir, AuthTokenVar, "auth token: the bearer token of /mcp (crew mcp serve reads it), and of the web UI and API off loopback; crew serve made it for /mcp, so on a loopback listen the web UI asks no login (set a value of your own to make it ask)", func() string { return v })
	if err == nil {
		h.Env[AuthTokenVar] = t
	}
	return t, err
}

// tokenMark is what mcpTokenMark holds for token t.
func tokenMark(t string) string {
	sum := sha256.Sum256([]byte(t))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// madeForMCP: token is the CREW_AUTH_TOKEN serve generated for /mcp, not
// one the owner set.
func (h *Home) madeForMCP(token string) bool {
	b, err := os.ReadFile(filepath.Join(h.Dir, mcpTokenMark))
	return err == nil && token != "" && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(string(b))), []byte(tokenMark(token))) == 1
}

// WebTrust is doctor's view of who can reach the server and whether
// exports are keyed, one report line each; it names where secrets are,
// never their values.
func (h *Home) WebTrust(getenv func(string) string) []string {
	var lines []string
	token, source := h.AuthToken(getenv)
	loopback, _ := IsLoopback(h.Config.Listen)
	hosts := "127.0.0.1, localhost, [::1]"
	if token != "" && len(h.Config.Web.Hosts) > 0 {
		hosts += ", " + strings.Join(h.Config.Web.Hosts, ", ")
	}
	switch {
	case token != "" && loopback && len(h.Config.Web.Hosts) == 0 && h.madeForMCP(token):
		lines = append(lines, fmt.Sprintf("web: loopback only, no login (%s was made by crew serve for /mcp, which always needs it); answers to %s", source, hosts))
	case token != "":
		state := "ok"
		if err := web.CheckToken(token); err != nil {
			state = "refused by crew serve: " + err.Error()
		}
		lines = append(lines, fmt.Sprintf("web: auth token from %s (%s); answers to %s", source, state, hosts))
	case !loopback:
		lines = append(lines, fmt.Sprintf("web: listen %s is not loopback and no token is set: crew serve will generate %s in %s", h.Config.Listen, AuthTokenVar, filepath.Join(h.Dir, "env")))
	case len(h.Config.Web.Hosts) > 0:
		lines = append(lines, "web: web.hosts is set but no auth token: crew serve refuses it")
	default:
		lines = append(lines, fmt.Sprintf("web: loopback only, no auth token; answers to %s", hosts))
	}
	if h.Getenv(AuditKeyVar, getenv) != "" {
		lines = append(lines, fmt.Sprintf("audit key: %s (exports are keyed; crew verify proves their origin)", h.SecretSource(AuditKeyVar, getenv)))
	} else {
		lines = append(lines, fmt.Sprintf("audit key: none yet: the next crew serve or crew export writes %s to %s", AuditKeyVar, filepath.Join(h.Dir, "env")))
	}
	return lines
}
