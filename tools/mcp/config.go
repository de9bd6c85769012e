package mcp

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
)

// Config is one entry of config.yaml mcp_servers as the home declares it
// (cmd/crew/home decodes config.yaml into it): url (streamable HTTP) or
// command (stdio, started in the sandbox). Servers resolves it into the
// pool's Server.
type Config struct {
	URL string `yaml:"url"`
	// Command is the argv of a stdio server; Env its extra variables
	// (values may name ${VAR}); Cwd its working directory (default
	// <home>/mcp/<name>); Paths (read-write) and ReadPaths are what else
	// it sees of the home; Network gives it the shell's network policy.
	Command   []string          `yaml:"command"`
	Env       map[string]string `yaml:"env"`
	Cwd       string            `yaml:"cwd"`
	Paths     []string          `yaml:"paths"`
	ReadPaths []string          `yaml:"read_paths"`
	Network   bool              `yaml:"network"`
	// Headers go with every request; a value may name env variables as
	// ${VAR}.
	Headers        map[string]string `yaml:"headers"`
	ReadOnlyTools  []string          `yaml:"read_only_tools"`
	HiddenTools    []string          `yaml:"hidden_tools"`
	TimeoutSeconds int               `yaml:"timeout_seconds"` // 0: 60
	// OAuth configures crew mcp login for a remote server that asks for it
	// (a 401 with protected-resource metadata): a client registered by
	// hand (its secret a ${VAR}); without it a login registers
	// dynamically.
	OAuth *OAuth `yaml:"oauth"`
	// Autonomous "run": the server's tools that are not read-only run
	// unasked in autonomous conversations (jobs, delegated children,
	// teammates), as built-in gated tools do; "" or "ask": they ask the
	// owner in every seat (R-GATE-5).
	Autonomous string `yaml:"autonomous"`
}

// TokenFile is where crew mcp login keeps the grant of the remote server
// name of the crew home: the home's secret area, mode 0600 in a 0700
// folder.
func TokenFile(home, name string) string {
	return filepath.Join(home, "secrets", "mcp", name+".json")
}

// envRef is a ${VAR} in a header, env or client-secret value.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Servers are the entries of config.yaml mcp_servers of the crew home as
// the pool's servers, sorted by name, every ${VAR} taken from getenv (the
// home's variables). An entry naming a variable that is set nowhere is
// left out, with a problem saying which. Every value resolved is taught
// to r, so the pool, its results and the log never show it.
func Servers(home string, configs map[string]Config, getenv func(string) string, r *events.Redactor) (servers []Server, problems []string) {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		c := configs[name]
		s := Server{Name: name, URL: c.URL, ReadOnly: c.ReadOnlyTools, Hidden: c.HiddenTools, AutonomousRun: c.Autonomous == "run",
			Timeout: time.Duration(c.TimeoutSeconds) * time.Second, Headers: map[string]string{}}
		var missing []string
		resolve := func(v string) string {
			return envRef.ReplaceAllStringFunc(v, func(ref string) string {
				name := envRef.FindStringSubmatch(ref)[1]
				val := getenv(name)
				if val == "" {
					missing = append(missing, name)
				} else if len(val) >= events.MinEnvFileSecret {
					r.Add(name, val) // also when it came from a process variable whose name does not look secret
				}
				return val
			})
		}
		for k, v := range c.Headers {
			s.Headers[k] = resolve(v)
			if len(s.Headers[k]) >= events.MinEnvFileSecret {
				r.Add("mcp_servers."+name+".headers."+k, s.Headers[k])
			}
		}
		if c.URL != "" {
			s.TokenFile = TokenFile(home, name)
			TeachGrant(s.TokenFile, name, r)
		}
		if o := c.OAuth; o != nil {
			s.OAuth = &OAuth{ClientID: o.ClientID, ClientSecret: resolve(o.ClientSecret), Scopes: o.Scopes}
			if len(s.OAuth.ClientSecret) >= events.MinEnvFileSecret {
				r.Add("mcp_servers."+name+".oauth.client_secret", s.OAuth.ClientSecret)
			}
		}
		if len(c.Command) > 0 {
			s.Stdio = c.stdio(home, name)
			for _, k := range slices.Sorted(maps.Keys(c.Env)) {
				v := resolve(c.Env[k])
				if len(v) >= events.MinEnvFileSecret {
					r.Add("mcp_servers."+name+".env."+k, v) // env values never reach the log
				}
				s.Stdio.Env = append(s.Stdio.Env, k+"="+v)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			key := "headers"
			if len(c.Command) > 0 {
				key = "env"
			} else if c.OAuth != nil && strings.Contains(c.OAuth.ClientSecret, "${") {
				key = "headers or oauth.client_secret"
			}
			problems = append(problems, fmt.Sprintf("%s: mcp_servers.%s.%s: %s not set in %s or the environment; the server is not used",
				filepath.Join(home, "config.yaml"), name, key, strings.Join(slices.Compact(missing), ", "), filepath.Join(home, "env")))
			continue
		}
		servers = append(servers, s)
	}
	return servers, problems
}

// stdio is a stdio entry's start: its paths made absolute against the
// home, its working directory <home>/mcp/<name> unless set.
func (c Config) stdio(home, name string) *Stdio {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(home, p)
	}
	st := &Stdio{Command: c.Command, Dir: filepath.Join(home, "mcp", name), Home: home, Network: c.Network}
	if c.Cwd != "" {
		st.Dir = abs(c.Cwd)
	}
	for _, p := range c.Paths {
		st.Paths = append(st.Paths, abs(p))
	}
	for _, p := range c.ReadPaths {
		st.ReadPaths = append(st.ReadPaths, abs(p))
	}
	return st
}

// Named is the server called name among servers (Servers'), or an error
// saying why there is none: the problem that left it out, or that
// config.yaml declares no such server (declared are the names it has).
func Named(servers []Server, problems, declared []string, name string) (Server, error) {
	if i := slices.IndexFunc(servers, func(s Server) bool { return s.Name == name }); i >= 0 {
		return servers[i], nil
	}
	for _, p := range problems {
		if strings.Contains(p, "mcp_servers."+name+".") {
			return Server{}, errors.New(p)
		}
	}
	return Server{}, fmt.Errorf("no MCP server %q in config.yaml mcp_servers (declared: %s)", name, strings.Join(declared, ", "))
}

// Usable is what an agent's mcp: list (in the agent.yaml of dir) keeps
// of names: an undeclared server is an error naming those declared, a
// declared one that cannot be used (not in usable: its problem is
// reported once, for the server) is dropped.
func Usable(dir string, names []string, declared map[string]Config, usable []Server) ([]string, error) {
	var keep []string
	for _, name := range names {
		if _, ok := declared[name]; !ok {
			return nil, fmt.Errorf("%s/agent.yaml: mcp: unknown server %q (config.yaml mcp_servers declares: %s)", dir, name,
				cmp.Or(strings.Join(slices.Sorted(maps.Keys(declared)), ", "), "none"))
		}
		if slices.ContainsFunc(usable, func(s Server) bool { return s.Name == name }) {
			keep = append(keep, name)
		}
	}
	return keep, nil
}
