package home

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// ImportedMCP is what ImportMCP did with one server of a Claude Desktop,
// Claude Code, Cursor or VS Code style MCP config: imported under Name
// (the entry as written to config.yaml, Notes saying what changed on the
// way), or skipped, with Skipped saying why.
type ImportedMCP struct {
	From    string // the name in the file
	Name    string // the name in config.yaml ("" when skipped)
	Summary string // transport and target, e.g. "stdio npx -y pkg"
	Notes   []string
	Skipped string
	// Existing is the config.yaml name of a server skipped because it is
	// declared there already.
	Existing string
}

// MCPImport is the outcome of ImportMCP: every server of the file in
// name order, the variables moved into <home>/env, and whether an
// agent's mcp: list was extended.
type MCPImport struct {
	Servers []ImportedMCP
	EnvVars []string // names added to <home>/env
	Agent   string   // the agent whose mcp: list now names the imports ("" if none)
	DryRun  bool
}

// Write tells the owner what the import of the home at dir did (or would
// do, on a dry run): each server imported with its notes or skipped with
// the reason, the secrets moved into the env file, and what is left to do.
func (r *MCPImport) Write(w io.Writer, dir string) {
	verb, imported := "imported", 0
	if r.DryRun {
		verb = "would import"
	}
	for _, s := range r.Servers {
		if s.Skipped != "" {
			fmt.Fprintf(w, "not imported %s: %s\n", s.From, s.Skipped)
			continue
		}
		imported++
		fmt.Fprintf(w, "%s %s: %s\n", verb, s.Name, s.Summary)
		for _, n := range s.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	if len(r.EnvVars) > 0 {
		fmt.Fprintf(w, "secrets kept in %s/env, named in config.yaml as ${VAR}: %s\n", dir, strings.Join(r.EnvVars, ", "))
	}
	switch {
	case r.DryRun:
		fmt.Fprintln(w, "dry run: nothing written")
	case r.Agent != "":
		fmt.Fprintf(w, "agent %s may use them (mcp: in its agent.yaml); their tools ask before they run unless listed in read_only_tools; restart crew serve to load them\n", r.Agent)
	case imported == 0:
		fmt.Fprintln(w, "nothing imported")
	default:
		fmt.Fprintln(w, "no agent uses them yet: list them under mcp: in an agent.yaml (or rerun with --agent master); restart crew serve to load them")
	}
}

// mcpFileEntry is one server as the MCP clients write it: command + args
// (+ env, cwd) for stdio, url (+ headers) for HTTP, type or transport
// naming it explicitly. Other keys are kept to say they were not mapped.
type mcpFileEntry struct {
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	Cwd       string            `json:"cwd"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers"`
	Type      string            `json:"type"`
	Transport string            `json:"transport"`
	Disabled  bool              `json:"disabled"`
}

var mcpEntryKeys = []string{"command", "args", "env", "cwd", "url", "headers", "type", "transport", "disabled"}

// ImportMCP reads the mcpServers (or VS Code's servers) object of the JSON
// file at src and adds each server it can map to config.yaml's mcp_servers
// of the home at dir, keeping every comment and line of the file. Literal
// env and header values (secrets, typically) go into <home>/env as
// MCP_<SERVER>_<KEY> and the entry names them as ${VAR}. A server whose
// name is already in config.yaml, that is disabled, or whose transport the
// crew cannot speak (SSE, a docker command) is skipped, saying why. With
// agent set, that agent's mcp: list is extended by the imported names.
// With dryRun nothing is written. A bad file changes nothing and its error
// names file:line:col.
func ImportMCP(dir, src, agent string, dryRun bool) (*MCPImport, error) {
	entries, order, err := readMCPFile(src)
	if err != nil {
		return nil, err
	}
	h, err := Load(dir)
	if err != nil {
		return nil, err
	}
	var agentDir string
	if agent != "" {
		a, ok := h.Agents[agent]
		if !ok {
			return nil, fmt.Errorf("no agent %q in %s (agents: %s)", agent, dir, strings.Join(slices.Sorted(maps.Keys(h.Agents)), ", "))
		}
		agentDir = a.Dir
	}
	res := &MCPImport{DryRun: dryRun}
	declared, taken := map[string]bool{}, map[string]bool{}
	for n := range h.Config.MCPServers {
		declared[n] = true
	}
	env := maps.Clone(h.Env)
	var envAdd []string // "NAME=value" lines
	var yamlAdd strings.Builder
	var names, use []string // imported; for the agent's mcp: list, also those already declared
	for _, from := range order {
		im, add, block := mapMCPEntry(from, entries[from], declared, taken, env)
		if im.Skipped == "" || im.Existing != "" {
			use = append(use, cmp.Or(im.Name, im.Existing))
		}
		if im.Skipped == "" {
			taken[im.Name] = true
			names = append(names, im.Name)
			for _, kv := range add {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
				res.EnvVars = append(res.EnvVars, k)
			}
			envAdd = append(envAdd, add...)
			yamlAdd.WriteString(block)
		}
		res.Servers = append(res.Servers, im)
	}
	if len(use) == 0 || (len(names) == 0 && agent == "") {
		return res, nil
	}
	cfgPath := filepath.Join(h.Dir, "config.yaml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, readError(cfgPath, err)
	}
	newCfg := cfg
	if len(names) > 0 {
		if newCfg, err = addMCPServers(cfg, yamlAdd.String()); err != nil {
			return nil, fmt.Errorf("%s: %w", cfgPath, err)
		}
	}
	var agentPath string
	var newAgent []byte
	if agent != "" {
		agentPath = filepath.Join(agentDir, "agent.yaml")
		old, err := os.ReadFile(agentPath)
		if err != nil {
			return nil, readError(agentPath, err)
		}
		if newAgent, err = addAgentMCP(old, use); err != nil {
			return nil, fmt.Errorf("%s: %w", agentPath, err)
		}
		if bytes.Equal(newAgent, old) {
			newAgent = nil
		} else {
			res.Agent = agent
		}
	}
	// The result must load as serve will load it, before anything is written.
	tmp := cfgPath + ".import"
	if err := WriteFileAtomic(tmp, newCfg, 0o600); err != nil {
		return nil, err
	}
	_, lerr := loadConfig(tmp)
	os.Remove(tmp)
	if lerr != nil {
		return nil, fmt.Errorf("the imported entries do not load (nothing written): %w", lerr)
	}
	if dryRun {
		return res, nil
	}
	if len(envAdd) > 0 { // env first: config.yaml never names a variable the env file lacks
		envPath := filepath.Join(h.Dir, "env")
		old, err := os.ReadFile(envPath)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, readError(envPath, err)
		}
		var b bytes.Buffer
		b.Write(old)
		if len(old) > 0 && old[len(old)-1] != '\n' {
			b.WriteByte('\n')
		}
		b.WriteString("# MCP server secrets imported from " + filepath.Base(src) + "\n")
		for _, kv := range envAdd {
			k, v, _ := strings.Cut(kv, "=")
			b.WriteString(k + "=" + envQuote(v) + "\n")
		}
		if err := WriteFileAtomic(envPath, b.Bytes(), 0o600); err != nil {
			return nil, err
		}
	}
	info, err := os.Stat(cfgPath)
	if err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(cfgPath, newCfg, info.Mode().Perm()); err != nil {
		return nil, err
	}
	if newAgent != nil {
		info, err := os.Stat(agentPath)
		if err != nil {
			return nil, err
		}
		if err := WriteFileAtomic(agentPath, newAgent, info.Mode().Perm()); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// readMCPFile decodes the servers of an MCP client's config: the
// mcpServers object (Claude Desktop, Claude Code's .mcp.json, Cursor,
// Windsurf, Cline) or VS Code's servers; the names in file order.
func readMCPFile(src string) (map[string]json.RawMessage, []string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return nil, nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, jsonError(src, data, err)
	}
	raw, ok := top["mcpServers"]
	if !ok {
		raw, ok = top["servers"]
	}
	if !ok {
		return nil, nil, fmt.Errorf("%s: no mcpServers (or servers) object: not an MCP client config", src)
	}
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(raw, &servers); err != nil {
		return nil, nil, jsonError(src, data, fmt.Errorf("mcpServers: %w", err))
	}
	// File order, not map order: the output reads as the file does.
	dec := json.NewDecoder(bytes.NewReader(raw))
	var order []string
	if t, _ := dec.Token(); t == json.Delim('{') {
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				break
			}
			order = append(order, t.(string))
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				break
			}
		}
	}
	return servers, order, nil
}

// jsonError names the line and column of a JSON syntax or type error.
func jsonError(src string, data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return fmt.Errorf("%s: %w", src, err)
	}
	before := data[:min(int(off), len(data))]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Errorf("%s:%d:%d: %w", src, line, col, err)
}

// mcpName is what config.yaml's mcp_servers accepts as a name.
var mcpName = regexp.MustCompile(`^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$`)

// fetchers are launchers that download the server on first start: they
// need the network.
var fetchers = []string{"npx", "uvx", "bunx", "pnpx"}

// mapMCPEntry maps one server: the result, the env lines it adds and the
// YAML block (two-space indented under mcp_servers) it writes.
func mapMCPEntry(from string, raw json.RawMessage, declared, taken map[string]bool, env map[string]string) (im ImportedMCP, envAdd []string, block string) {
	im.From = from
	var e mcpFileEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		im.Skipped = "not an object of command/args/env or url/headers: " + err.Error()
		return
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(raw, &keys)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !slices.Contains(mcpEntryKeys, k) {
			im.Notes = append(im.Notes, fmt.Sprintf("%s: not mapped (the crew has no such setting; gating is read_only_tools, asked otherwise)", k))
		}
	}
	kind := strings.ToLower(e.Type + e.Transport)
	switch {
	case e.Disabled:
		im.Skipped = "disabled in the file"
		return
	case kind == "sse" || (e.URL != "" && kind == "" && strings.HasSuffix(strings.TrimRight(e.URL, "/"), "/sse")):
		im.Skipped = "SSE transport: the crew speaks streamable HTTP; if the server also serves it, add its URL by hand"
		return
	case e.URL != "" && e.Command != "":
		im.Skipped = "both url and command: say which by hand"
		return
	case e.URL == "" && e.Command == "":
		im.Skipped = "neither command nor url"
		return
	case e.Command != "" && filepath.Base(e.Command) == "docker":
		im.Skipped = "a docker command: the sandbox hides the docker socket; run the container yourself and add its streamable HTTP URL"
		return
	}
	if e.URL != "" && !strings.HasPrefix(e.URL, "http://") && !strings.HasPrefix(e.URL, "https://") {
		im.Skipped = "url is not http(s): " + e.URL
		return
	}
	im.Name = importName(from, declared, taken)
	if im.Name == "" {
		im.Existing = importName(from, nil, nil)
		im.Skipped = "already in config.yaml mcp_servers as " + im.Existing + " (not changed)"
		return
	}
	if im.Name != from {
		im.Notes = append(im.Notes, "named "+im.Name+" (config.yaml names are letters, digits and -, words joined by single _)")
	}
	secret := func(key, v string) (string, bool) {
		if strings.Contains(v, "${") {
			if strings.Contains(v, ":-") {
				im.Notes = append(im.Notes, key+": a ${VAR:-default} is not expanded by the crew; set the variable in the env file")
			}
			return v, true
		}
		name := mcpEnvVar(im.Name, key)
		if old, ok := env[name]; ok && old != v {
			im.Skipped = fmt.Sprintf("the env file already sets %s to another value", name)
			return "", false
		} else if !ok {
			envAdd = append(envAdd, name+"="+v)
		}
		return "${" + name + "}", true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %s:\n", im.Name)
	if e.URL != "" {
		im.Summary = "streamable HTTP " + e.URL
		fmt.Fprintf(&b, "    url: %s\n", yamlQuote(e.URL))
		if len(e.Headers) > 0 {
			b.WriteString("    headers:\n")
			for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
				v, ok := secret(k, e.Headers[k])
				if !ok {
					return im, nil, ""
				}
				fmt.Fprintf(&b, "      %s: %s\n", yamlQuote(k), yamlQuote(v))
			}
		}
		for _, k := range []struct {
			name string
			set  bool
		}{{"args", len(e.Args) > 0}, {"env", len(e.Env) > 0}, {"cwd", e.Cwd != ""}} {
			if k.set {
				im.Notes = append(im.Notes, k.name+": not mapped (only for a command)")
			}
		}
		return im, envAdd, b.String()
	}
	argv := append([]string{e.Command}, e.Args...)
	im.Summary = "stdio " + strings.Join(argv, " ")
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = yamlQuote(a)
	}
	fmt.Fprintf(&b, "    command: [%s]\n", strings.Join(quoted, ", "))
	if len(e.Env) > 0 {
		b.WriteString("    env:\n")
		for _, k := range slices.Sorted(maps.Keys(e.Env)) {
			v, ok := secret(k, e.Env[k])
			if !ok {
				return im, nil, ""
			}
			fmt.Fprintf(&b, "      %s: %s\n", yamlQuote(k), yamlQuote(v))
		}
	}
	if e.Cwd != "" {
		fmt.Fprintf(&b, "    cwd: %s\n", yamlQuote(e.Cwd))
	}
	var paths []string
	for _, a := range e.Args {
		if strings.Contains(a, "${") {
			im.Notes = append(im.Notes, "args name "+a+": not expanded by the crew")
		}
		if filepath.IsAbs(a) && isDir(a) && !slices.Contains(paths, filepath.Clean(a)) {
			paths = append(paths, filepath.Clean(a))
		}
	}
	if len(paths) > 0 {
		q := make([]string, len(paths))
		for i, p := range paths {
			q[i] = yamlQuote(p)
		}
		fmt.Fprintf(&b, "    paths: [%s]\n", strings.Join(q, ", "))
		im.Notes = append(im.Notes, "may write in the folders its arguments name: "+strings.Join(paths, ", ")+" (paths:)")
	}
	if slices.Contains(fetchers, filepath.Base(e.Command)) {
		b.WriteString("    network: true\n")
		im.Notes = append(im.Notes, "network: true, as "+filepath.Base(e.Command)+" fetches the package on first start")
	}
	return im, envAdd, b.String()
}

// importName is from as config.yaml accepts it, "" when that name is
// declared in config.yaml already; a name two servers of the file map to
// gets -2, -3 ….
func importName(from string, declared, taken map[string]bool) string {
	n := from
	if !mcpName.MatchString(n) || len(n) > 32 {
		var b strings.Builder
		dash := false
		for _, r := range from {
			ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
			if ok {
				b.WriteRune(r)
				dash = false
			} else if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
		n = strings.TrimRight(b.String(), "-")
		if len(n) > 28 {
			n = strings.TrimRight(n[:28], "-")
		}
		if n == "" {
			n = "server"
		}
	}
	if declared[n] {
		return ""
	}
	base := n
	for i := 2; taken[n] || declared[n]; i++ {
		n = fmt.Sprintf("%s-%d", base, i)
	}
	return n
}

// mcpEnvVar is the env file variable an imported secret of server goes to.
func mcpEnvVar(server, key string) string {
	up := func(s string) string {
		var b strings.Builder
		for _, r := range strings.ToUpper(s) {
			if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		return b.String()
	}
	return "MCP_" + up(server) + "_" + up(key)
}

// envQuote writes v double-quoted as the env file reads it back (scanQuoted).
func envQuote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\r", `\r`)
	return `"` + r.Replace(v) + `"`
}

// yamlQuote writes s as a double-quoted YAML scalar (JSON's escapes are
// YAML's).
func yamlQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// addMCPServers inserts block (entries indented two spaces) into the
// mcp_servers mapping of config.yaml data, after its last entry, or adds
// mcp_servers at the end when the file has none. Every other line stays.
func addMCPServers(data []byte, block string) ([]byte, error) {
	lines := strings.SplitAfter(string(data), "\n")
	kv, next, err := topKey(data, "mcp_servers")
	if err != nil {
		return nil, err
	}
	if kv == nil {
		out := string(data)
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		return []byte(out + "\nmcp_servers:\n" + block), nil
	}
	keyLine := kv.Key.GetToken().Position.Line - 1
	indent := 0
	switch v := kv.Value.(type) {
	case *ast.NullNode:
	case *ast.MappingNode:
		if v.IsFlowStyle && len(v.Values) > 0 {
			return nil, fmt.Errorf("%d:%d: mcp_servers is written inline ({...}); write it as a block to import into it", v.GetToken().Position.Line, v.GetToken().Position.Column)
		}
		if !v.IsFlowStyle {
			indent = v.Values[0].Key.GetToken().Position.Column - 1
		}
	case *ast.MappingValueNode: // a one-entry block mapping
		indent = v.Key.GetToken().Position.Column - 1
	default:
		return nil, fmt.Errorf("%d: mcp_servers is not a mapping", keyLine+1)
	}
	if indent == 0 {
		// mcp_servers: with nothing (or {}) after it: the key line becomes a block.
		lines[keyLine] = strings.Repeat(" ", kv.Key.GetToken().Position.Column-1) + "mcp_servers:\n"
		lines = slices.Insert(lines, keyLine+1, block)
		return []byte(strings.Join(lines, "")), nil
	}
	if indent != 2 {
		block = reindent(block, indent)
	}
	// After the block's last line that is not blank or a comment, before the
	// next top-level key (comments above that key stay with it).
	end := len(lines)
	if next != nil {
		end = next.Key.GetToken().Position.Line - 1
	}
	at := keyLine + 1
	for i := keyLine + 1; i < end; i++ {
		if t := strings.TrimSpace(lines[i]); t != "" && !strings.HasPrefix(t, "#") {
			at = i + 1
		}
	}
	if !strings.HasSuffix(lines[at-1], "\n") {
		lines[at-1] += "\n"
	}
	lines = slices.Insert(lines, at, block)
	return []byte(strings.Join(lines, "")), nil
}

// reindent moves a two-space indented block to indent spaces per level.
func reindent(block string, indent int) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(block, "\n") {
		t := strings.TrimLeft(l, " ")
		lvl := (len(l) - len(t)) / 2
		b.WriteString(strings.Repeat(" ", lvl*indent) + t)
	}
	return b.String()
}

// topKey is the top-level key name of a YAML mapping and the key after it
// (nil when it is the last or absent).
func topKey(data []byte, name string) (kv, next *ast.MappingValueNode, err error) {
	f, err := parser.ParseBytes(data, parser.ParseComments)
	if err != nil {
		return nil, nil, err
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, nil, nil
	}
	top, ok := mappingValues(f.Docs[0].Body)
	if !ok {
		return nil, nil, errors.New("not a mapping")
	}
	for i, v := range top {
		if v.Key.String() == name {
			if i+1 < len(top) {
				next = top[i+1]
			}
			return v, next, nil
		}
	}
	return nil, nil, nil
}

// addAgentMCP adds names to agent.yaml's mcp: list (those not there yet),
// or adds mcp: [names] at the end of the file.
func addAgentMCP(data []byte, names []string) ([]byte, error) {
	kv, _, err := topKey(data, "mcp")
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(data), "\n")
	if kv == nil {
		out := string(data)
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		return []byte(out + "mcp: [" + strings.Join(names, ", ") + "]\n"), nil
	}
	seq, ok := kv.Value.(*ast.SequenceNode)
	if !ok {
		if _, null := kv.Value.(*ast.NullNode); !null {
			return nil, fmt.Errorf("%d: mcp is not a list", kv.Key.GetToken().Position.Line)
		}
		seq = nil
	}
	var have []string
	if seq != nil {
		for _, v := range seq.Values {
			have = append(have, strings.Trim(v.String(), `"'`))
		}
	}
	var add []string
	for _, n := range names {
		if !slices.Contains(have, n) {
			add = append(add, n)
		}
	}
	if len(add) == 0 {
		return data, nil
	}
	keyLine := kv.Key.GetToken().Position.Line - 1
	if seq == nil || seq.IsFlowStyle {
		if seq != nil && seq.End != nil && seq.End.Position.Line != seq.Start.Position.Line {
			return nil, fmt.Errorf("%d: mcp: spans lines; add %s by hand", keyLine+1, strings.Join(add, ", "))
		}
		// The whole line: mcp: [have..., add...], its comment kept.
		comment := ""
		if i := strings.Index(lines[keyLine], " #"); i >= 0 && (seq == nil || i > seq.End.Position.Column-1) {
			comment = " " + strings.TrimSpace(lines[keyLine][i:])
		}
		lines[keyLine] = "mcp: [" + strings.Join(append(have, add...), ", ") + "]" + comment + "\n"
		return []byte(strings.Join(lines, "")), nil
	}
	last := seq.Values[len(seq.Values)-1].GetToken().Position.Line - 1
	indent := strings.Repeat(" ", seq.Start.Position.Column-1)
	if !strings.HasSuffix(lines[last], "\n") {
		lines[last] += "\n"
	}
	var ins []string
	for _, n := range add {
		ins = append(ins, indent+"- "+n+"\n")
	}
	lines = slices.Insert(lines, last+1, ins...)
	return []byte(strings.Join(lines, "")), nil
}
