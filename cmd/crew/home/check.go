package home

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools/web/wall"
	"github.com/robfig/cron/v3"
)

// The checks below cover what JSON Schema cannot say. Each returns the
// first problem with the position of the key it concerns.

func checkConfig(f *yamlFile, c *Config) error {
	loc, err := loadZone(c.Timezone)
	if err != nil {
		return f.errAt([]string{"timezone"}, "timezone", "timezone: "+err.Error())
	}
	c.loc = loc
	if err := checkHostPort(c.Listen); err != nil {
		return f.errAt([]string{"listen"}, "listen", "listen: "+err.Error())
	}
	if c.NATS.Listen != "" {
		if err := checkHostPort(c.NATS.Listen); err != nil {
			return f.errAt([]string{"nats", "listen"}, "nats.listen", "nats.listen: "+err.Error())
		}
	}
	if err := checkNATSClient(f, &c.NATS); err != nil {
		return err
	}
	for i, h := range c.Web.Hosts {
		if _, _, err := net.SplitHostPort(h); err == nil {
			if err := checkHostPort(h); err != nil {
				key := fmt.Sprintf("web.hosts[%d]", i)
				return f.errAt([]string{"web", "hosts", strconv.Itoa(i)}, key, key+": "+err.Error())
			}
		}
	}
	for i, h := range c.ShellHosts {
		if err := wall.CheckHostPattern(h); err != nil {
			key := fmt.Sprintf("shell_hosts[%d]", i)
			return f.errAt([]string{"shell_hosts", strconv.Itoa(i)}, key, key+": "+err.Error())
		}
	}
	if err := checkMCPServers(f, c); err != nil {
		return err
	}
	return checkModels(f, c)
}

// checkMCPServers: each entry is url (HTTP) or command (stdio), and keeps
// to its own transport's keys.
func checkMCPServers(f *yamlFile, c *Config) error {
	for _, name := range slices.Sorted(maps.Keys(c.MCPServers)) {
		m := c.MCPServers[name]
		base := []string{"mcp_servers", name}
		key := "mcp_servers." + name
		switch {
		case m.URL == "" && len(m.Command) == 0:
			return f.errAt(base, key, key+": set url (a streamable HTTP server) or command (a stdio server the crew starts)")
		case m.URL != "" && len(m.Command) > 0:
			return f.errAt(append(base, "command"), key+".command", key+": set url or command, not both")
		}
		if m.URL != "" {
			for _, k := range []struct {
				name string
				set  bool
			}{{"env", m.Env != nil}, {"cwd", m.Cwd != ""}, {"paths", m.Paths != nil}, {"read_paths", m.ReadPaths != nil}, {"network", m.Network}} {
				if k.set {
					return f.errAt(append(base, k.name), key+"."+k.name, fmt.Sprintf("%s.%s: only for a stdio server (command), not with url", key, k.name))
				}
			}
		}
		if len(m.Command) > 0 && m.OAuth != nil {
			return f.errAt(append(base, "oauth"), key+".oauth", key+".oauth: only with url; a stdio server logs in through its env")
		}
		if o := m.OAuth; o != nil && o.ClientSecret != "" && o.ClientID == "" {
			return f.errAt(append(base, "oauth", "client_secret"), key+".oauth.client_secret", key+".oauth.client_secret: set client_id too (the secret is of that client)")
		}
		if len(m.Command) > 0 && m.Headers != nil {
			return f.errAt(append(base, "headers"), key+".headers", key+".headers: only with url; a stdio server gets its secrets through env")
		}
	}
	return nil
}

// checkModels: every key is a route, and a reply limit fits in the window.
func checkModels(f *yamlFile, c *Config) error {
	keys := make([]string, 0, len(c.Models))
	for k := range c.Models {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := llm.ParseRoute(k); err != nil {
			return f.errAtKey([]string{"models"}, k, "models."+k, "models: "+err.Error())
		}
		spec := c.Catalog().Lookup(k)
		if spec.MaxOutputTokens >= spec.ContextWindow {
			return f.errAt([]string{"models", k}, "models."+k, fmt.Sprintf("models.%s: max_output_tokens %d must be below context_window %d", k, spec.MaxOutputTokens, spec.ContextWindow))
		}
	}
	return nil
}

// Catalog is the models: block over the built-in defaults.
func (c *Config) Catalog() *llm.Catalog {
	owner := make(map[string]llm.ModelOverride, len(c.Models))
	for k, m := range c.Models {
		owner[k] = llm.ModelOverride{ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens, Vision: m.Vision,
			InputUSDPerMTok: m.InputUSDPerMTok, OutputUSDPerMTok: m.OutputUSDPerMTok}
	}
	return llm.NewCatalog(owner)
}

// loadZone accepts IANA names only; "Local" would make schedules depend on
// the machine the home happens to be on.
func loadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("want an IANA time zone name such as Europe/Berlin, got %q", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q (want an IANA name such as Europe/Berlin)", name)
	}
	return loc, nil
}

func checkHostPort(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("want host:port, got %q", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port must be 1..65535, got %q", port)
	}
	return nil
}

func checkAgent(f *yamlFile, a *Agent, c *Config) error {
	for i, t := range a.Tools {
		if strings.HasPrefix(t, "computer_") {
			key := fmt.Sprintf("tools[%d]", i)
			return f.errAt([]string{"tools", strconv.Itoa(i)}, key, fmt.Sprintf(`%s: %s comes with computer: "on", not with tools`, key, t))
		}
	}
	if len(a.Policy.ComputerApps) > 0 && !a.ComputerOn() {
		return f.errAtKey(nil, "computer_apps", "computer_apps", `computer_apps: set computer: "on" too, or the apps are listed for nothing`)
	}
	for i := range a.Schedules {
		if err := checkSchedule(f, i, &a.Schedules[i]); err != nil {
			return err
		}
	}
	return checkScheduleNames(f, a.Schedules)
}

// checkSchedule enforces the job kinds of R-JOB: a prompt, a kit command,
// a script or a memory consolidation, and then_prompt only after a script.
func checkSchedule(f *yamlFile, i int, s *Schedule) error {
	base := []string{"schedules", strconv.Itoa(i)}
	key := keyPath(base)
	set := 0
	for _, v := range []string{s.Prompt, s.Command, s.Script} {
		if v != "" {
			set++
		}
	}
	if s.Consolidate {
		set++
	}
	if set != 1 {
		return f.errAt(base, key, key+": set exactly one of prompt, command, script or consolidate: true")
	}
	if s.ThenPrompt != "" && s.Script == "" {
		loc := append(cloneLoc(base), "then_prompt")
		return f.errAt(loc, keyPath(loc), keyPath(loc)+": only allowed with script")
	}
	if _, err := cron.ParseStandard(s.Cron); err != nil {
		loc := append(cloneLoc(base), "cron")
		return f.errAt(loc, keyPath(loc), fmt.Sprintf("%s: invalid cron expression %q: %v", keyPath(loc), s.Cron, err))
	}
	return nil
}

// checkScheduleNames rejects duplicates: the name identifies the job in its
// state and in the event log.
func checkScheduleNames(f *yamlFile, ss []Schedule) error {
	seen := map[string]bool{}
	for i, s := range ss {
		if seen[s.Name] {
			loc := []string{"schedules", strconv.Itoa(i), "name"}
			return f.errAt(loc, keyPath(loc), fmt.Sprintf("%s: duplicate schedule name %q", keyPath(loc), s.Name))
		}
		seen[s.Name] = true
	}
	return nil
}

// checkNATSClient: nats.url's servers parse, and its files (resolved
// against the home here) go with it and exist; nats.listen is the embedded
// server's and does not.
func checkNATSClient(f *yamlFile, n *NATSConfig) error {
	files := []struct {
		key  string
		path *string
	}{{"creds", &n.Creds}, {"tls_ca", &n.TLSCA}, {"tls_cert", &n.TLSCert}, {"tls_key", &n.TLSKey}}
	if n.URL == "" {
		for _, fl := range files {
			if *fl.path != "" {
				return f.errAt([]string{"nats", fl.key}, "nats."+fl.key, "nats."+fl.key+": only with nats.url")
			}
		}
		return nil
	}
	if n.Listen != "" {
		return f.errAt([]string{"nats", "listen"}, "nats.listen", "nats.listen: exposes the embedded server, which does not run with nats.url; remove one of them")
	}
	for _, u := range strings.Split(n.URL, ",") {
		parsed, err := url.Parse(u)
		if err == nil {
			err = checkHostPort(parsed.Host)
		}
		if err != nil {
			return f.errAt([]string{"nats", "url"}, "nats.url", fmt.Sprintf("nats.url: %s: %v", events.RedactURL(u), err))
		}
	}
	if (n.TLSCert == "") != (n.TLSKey == "") {
		return f.errAt([]string{"nats", "tls_cert"}, "nats.tls_cert", "nats.tls_cert and nats.tls_key go together")
	}
	home := filepath.Dir(f.path)
	for _, fl := range files {
		if *fl.path == "" {
			continue
		}
		if !filepath.IsAbs(*fl.path) {
			*fl.path = filepath.Join(home, *fl.path)
		}
		if _, err := os.Stat(*fl.path); err != nil {
			return f.errAt([]string{"nats", fl.key}, "nats."+fl.key, fmt.Sprintf("nats.%s: %v", fl.key, err))
		}
	}
	return nil
}
