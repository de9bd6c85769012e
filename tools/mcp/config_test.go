package mcp

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// An MCP header's ${VAR} taken from the process environment under a name
// that does not look secret (GITHUB_PAT) is still a credential: once
// resolved for the pool it is redacted wherever it would be shown (a
// server echoing it in a result or an error, an event, a log line).
func TestServersRedactWhatTheyResolve(t *testing.T) {
	configs := map[string]Config{
		"gh": {URL: "https://mcp.example/mcp", Headers: map[string]string{"Authorization": "Bearer ${GITHUB_PAT}", "X-Org": "lit-${ORG_ID}-x"}},
	}
	env := map[string]string{"GITHUB_PAT": "ghp_only_in_process_env_42", "ORG_ID": "org77"}
	r := events.NewRedactor()
	home := t.TempDir()
	servers, problems := Servers(home, configs, func(k string) string { return env[k] }, r)
	if len(servers) != 1 || len(problems) != 0 {
		t.Fatalf("servers %v problems %v", servers, problems)
	}
	s := servers[0]
	if s.Headers["Authorization"] != "Bearer ghp_only_in_process_env_42" || s.Headers["X-Org"] != "lit-org77-x" {
		t.Errorf("headers %v", s.Headers)
	}
	if want := filepath.Join(home, "secrets", "mcp", "gh.json"); s.TokenFile != want {
		t.Errorf("token file %q, want %q", s.TokenFile, want)
	}
	for _, leak := range []string{"ghp_only_in_process_env_42", "lit-org77-x"} {
		if got := r.String("echo " + leak); strings.Contains(got, leak) {
			t.Errorf("resolved header value %q is not redacted: %q", leak, got)
		}
	}
}

// A stdio entry starts in <home>/mcp/<name> unless cwd says otherwise,
// its relative paths resolved against the home, its env resolved and
// sorted; its settings carry over as the pool reads them.
func TestServersStdioEntry(t *testing.T) {
	home := t.TempDir()
	configs := map[string]Config{
		"fs": {Command: []string{"node", "fs.js"}, Env: map[string]string{"Z": "last", "TOKEN": "${FS_TOKEN}"}, Paths: []string{"notes", "/abs/../data"},
			ReadPaths: []string{"docs"}, Network: true, ReadOnlyTools: []string{"read"}, HiddenTools: []string{"rm"}, TimeoutSeconds: 5, Autonomous: "run"},
		"cwd": {Command: []string{"x"}, Cwd: "work"},
	}
	r := events.NewRedactor()
	servers, problems := Servers(home, configs, func(k string) string { return map[string]string{"FS_TOKEN": "fs-secret-token-123"}[k] }, r)
	if len(problems) != 0 || len(servers) != 2 {
		t.Fatalf("servers %v problems %v", servers, problems)
	}
	if servers[0].Name != "cwd" || servers[1].Name != "fs" {
		t.Fatalf("servers not sorted by name: %s, %s", servers[0].Name, servers[1].Name)
	}
	if got, want := servers[0].Stdio.Dir, filepath.Join(home, "work"); got != want {
		t.Errorf("cwd entry's dir %q, want %q", got, want)
	}
	fs := servers[1]
	st := fs.Stdio
	if st.Dir != filepath.Join(home, "mcp", "fs") || st.Home != home || !st.Network {
		t.Errorf("stdio %+v", st)
	}
	if want := []string{filepath.Join(home, "notes"), "/data"}; !slices.Equal(st.Paths, want) {
		t.Errorf("paths %v, want %v", st.Paths, want)
	}
	if want := []string{filepath.Join(home, "docs")}; !slices.Equal(st.ReadPaths, want) {
		t.Errorf("read paths %v, want %v", st.ReadPaths, want)
	}
	if want := []string{"TOKEN=fs-secret-token-123", "Z=last"}; !slices.Equal(st.Env, want) {
		t.Errorf("env %v, want %v", st.Env, want)
	}
	if fs.TokenFile != "" || fs.Timeout.Seconds() != 5 || !fs.AutonomousRun || !slices.Equal(fs.ReadOnly, []string{"read"}) || !slices.Equal(fs.Hidden, []string{"rm"}) {
		t.Errorf("server %+v", fs)
	}
	if got := r.String("fs-secret-token-123"); strings.Contains(got, "fs-secret-token-123") {
		t.Errorf("env value not redacted: %q", got)
	}
}

// An entry naming a variable set nowhere is left out, and the problem
// names the key and the variables; the others are used.
func TestServersLeaveOutWhatDoesNotResolve(t *testing.T) {
	home := t.TempDir()
	configs := map[string]Config{
		"a":     {URL: "https://a.example/mcp", Headers: map[string]string{"X": "${NOPE} ${ALSO}"}},
		"b":     {Command: []string{"b"}, Env: map[string]string{"K": "${NOPE}"}},
		"c":     {URL: "https://c.example/mcp", OAuth: &OAuth{ClientID: "id", ClientSecret: "${NOPE}"}},
		"fine":  {URL: "https://fine.example/mcp"},
		"oauth": {URL: "https://o.example/mcp", OAuth: &OAuth{ClientID: "id", ClientSecret: "${SECRET}", Scopes: []string{"s"}}},
	}
	servers, problems := Servers(home, configs, func(k string) string { return map[string]string{"SECRET": "client-secret-value-9"}[k] }, events.NewRedactor())
	var names []string
	for _, s := range servers {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"fine", "oauth"}) {
		t.Errorf("servers %v, want fine and oauth", names)
	}
	if o := servers[1].OAuth; o == nil || o.ClientSecret != "client-secret-value-9" || configs["oauth"].OAuth.ClientSecret != "${SECRET}" {
		t.Errorf("oauth %+v (the config's must stay unresolved)", o)
	}
	cfg, env := filepath.Join(home, "config.yaml"), filepath.Join(home, "env")
	want := []string{
		cfg + ": mcp_servers.a.headers: ALSO, NOPE not set in " + env + " or the environment; the server is not used",
		cfg + ": mcp_servers.b.env: NOPE not set in " + env + " or the environment; the server is not used",
		cfg + ": mcp_servers.c.headers or oauth.client_secret: NOPE not set in " + env + " or the environment; the server is not used",
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems\n%q\nwant\n%q", problems, want)
	}

	// Named finds a usable server, says why a declared one is not usable,
	// and names those declared for one that is not.
	declared := slices.Sorted(maps.Keys(configs))
	if s, err := Named(servers, problems, declared, "oauth"); err != nil || s.Name != "oauth" || s.OAuth == nil {
		t.Errorf("Named oauth = %+v, %v", s, err)
	}
	if _, err := Named(servers, problems, declared, "b"); err == nil || err.Error() != want[1] {
		t.Errorf("Named b: %v, want its problem", err)
	}
	if _, err := Named(servers, problems, declared, "zz"); err == nil || err.Error() != `no MCP server "zz" in config.yaml mcp_servers (declared: a, b, c, fine, oauth)` {
		t.Errorf("Named zz: %v, want the declared names", err)
	}
}

// Usable keeps an agent's servers that can be used, drops a declared one
// that cannot, and refuses an undeclared one, naming those declared.
func TestUsable(t *testing.T) {
	declared := map[string]Config{"gh": {}, "fs": {}}
	usable := []Server{{Name: "gh"}}
	keep, err := Usable("/h/agents/a", []string{"gh", "fs"}, declared, usable)
	if err != nil || !slices.Equal(keep, []string{"gh"}) {
		t.Errorf("kept %v, %v; want [gh]", keep, err)
	}
	_, err = Usable("/h/agents/a", []string{"gh", "nope"}, declared, usable)
	if want := `/h/agents/a/agent.yaml: mcp: unknown server "nope" (config.yaml mcp_servers declares: fs, gh)`; err == nil || err.Error() != want {
		t.Errorf("err %v, want %s", err, want)
	}
	if _, err := Usable("/h", []string{"x"}, nil, nil); err == nil || !strings.HasSuffix(err.Error(), "declares: none)") {
		t.Errorf("err %v", err)
	}
}
