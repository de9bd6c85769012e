package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Home is a loaded home directory.
type Home struct {
	Dir      string            // absolute path
	Config   *Config           // config.yaml with defaults applied
	Agents   map[string]*Agent // by id; MasterID for the agent at the root
	Problems []error           // agents that failed to load and were skipped; master first, then by id
	Env      map[string]string // the env file; see Getenv
}

// Dir locates the home: $CREW_HOME, else ~/.my-agent-crew. getenv is
// os.Getenv in production and a map lookup in tests.
func Dir(getenv func(string) string) (string, error) {
	if d := getenv("CREW_HOME"); d != "" {
		if rest, ok := strings.CutPrefix(d, "~/"); ok && getenv("HOME") != "" {
			d = filepath.Join(getenv("HOME"), rest)
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", fmt.Errorf("locate home: %w", err)
		}
		return abs, nil
	}
	base := getenv("HOME")
	if base == "" {
		base = getenv("USERPROFILE") // Windows
	}
	if base == "" {
		return "", errors.New("locate home: neither CREW_HOME nor HOME is set")
	}
	return filepath.Join(base, ".my-agent-crew"), nil
}

// Load reads the home at dir. The error is fatal — config.yaml or env is
// missing, unreadable or invalid — and is a *ConfigError. Broken agents are
// not fatal: they go to Problems and the others load (R-HOME-3).
func Load(dir string) (*Home, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load home: %w", err)
	}
	cfg, err := loadConfig(filepath.Join(dir, "config.yaml"))
	if err != nil {
		return nil, err
	}
	env, err := loadEnv(filepath.Join(dir, "env"))
	if err != nil {
		return nil, err
	}
	h := &Home{Dir: dir, Config: cfg, Env: env, Agents: map[string]*Agent{}}
	h.loadAgents()
	return h, nil
}

// Getenv looks a variable up in the process environment first, then in the
// env file, so a one-off `KEY=x crew serve` beats the file. An empty process
// value counts as unset.
func (h *Home) Getenv(key string, osGetenv func(string) string) string {
	if osGetenv != nil {
		if v := osGetenv(key); v != "" {
			return v
		}
	}
	return h.Env[key]
}

// Lookup is Getenv with osGetenv: a variable of the process environment
// or else of the env file.
func (h *Home) Lookup(osGetenv func(string) string) func(string) string {
	return func(key string) string { return h.Getenv(key, osGetenv) }
}

func loadConfig(path string) (*Config, error) {
	c := defaultConfig()
	f, err := loadYAML(path, "config.schema.json", &c)
	var ce *ConfigError
	if errors.As(err, &ce) && errors.Is(ce.Err, fs.ErrNotExist) {
		ce.Msg = `missing (run "crew init")`
	}
	if err != nil {
		return nil, err
	}
	if err := checkConfig(f, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// agentID is what may name a folder under agents/: it ends up in event
// subjects, URLs and tool names.
var agentID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

func (h *Home) loadAgents() {
	h.addAgent(MasterID, h.Dir)
	root := filepath.Join(h.Dir, "agents")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		h.Problems = append(h.Problems, readError(root, err))
		return
	}
	for _, e := range entries { // ReadDir sorts by name, so Problems are stable
		if strings.HasPrefix(e.Name(), ".") || !isDir(filepath.Join(root, e.Name())) {
			continue // .git, .DS_Store, a README next to the agents
		}
		dir := filepath.Join(root, e.Name())
		if err := checkAgentID(e.Name(), dir); err != nil {
			h.Problems = append(h.Problems, err)
			continue
		}
		h.addAgent(e.Name(), dir)
	}
}

func (h *Home) addAgent(id, dir string) {
	a, err := loadAgent(id, dir, h.Config)
	if err != nil {
		h.Problems = append(h.Problems, err)
		return
	}
	h.Agents[id] = a
}

// checkAgentID vets the folder name of an agent under agents/.
func checkAgentID(id, dir string) error {
	if id == MasterID {
		return &ConfigError{File: dir, Key: id, Msg: `agent id "master" is reserved for the agent at the home root`}
	}
	if !agentID.MatchString(id) {
		return &ConfigError{File: dir, Key: id, Msg: fmt.Sprintf(
			"invalid agent id %q: want lowercase letters, digits, _ and -, starting with a letter or digit, at most 63", id)}
	}
	return nil
}

func loadAgent(id, dir string, cfg *Config) (*Agent, error) {
	a := defaultAgent()
	f, err := loadYAML(filepath.Join(dir, "agent.yaml"), "agent.schema.json", &a)
	if err != nil {
		return nil, err
	}
	if err := checkAgent(f, &a, cfg); err != nil {
		return nil, err
	}
	a.ID, a.Dir, a.Workspace = id, dir, filepath.Join(dir, "workspace")
	a.ApprovalTTL = a.EffectiveApprovalTTL(cfg)
	a.TelegramApprovalTTL = time.Duration(max(a.Telegram.ApprovalTTLSeconds, 0)) * time.Second
	return &a, nil
}

// isDir follows symlinks, so an agent folder may live elsewhere.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
