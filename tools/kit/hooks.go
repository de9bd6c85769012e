package kit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/my-agent-crew/crew/tools/shell"
)

// The hook events (R-LOOP-8), named as in Claude Code.
const (
	UserPromptSubmit = "UserPromptSubmit" // before a message from the owner starts a turn
	PreToolUse       = "PreToolUse"       // before a tool call runs
	PostToolUse      = "PostToolUse"      // after a tool call ran
	Stop             = "Stop"             // when a turn ends
)

// Limits of hook commands.
const (
	DefaultHookTimeout = 30 * time.Second
	MaxHookTimeout     = 10 * time.Minute
	maxHookOutput      = 4000 // characters kept of Outcome.Output and Reason
	// blockExitCode is Claude Code's convention: exit code 2 blocks, and
	// stderr says why.
	blockExitCode = 2
)

// Hooks are the owner's hook commands of the home and of an agent's folder.
// A nil *Hooks has none.
type Hooks struct {
	byEvent  map[string][]hook // in the order they run
	box      *shell.Sandbox    // where they run
	homeDir  string
	agentDir string
}

// hook is one configured command.
type hook struct {
	matcher *regexp.Regexp // nil matches every tool
	command string
	timeout time.Duration
}

// hooksFile is .agents/hooks.json, in Claude Code's format.
type hooksFile struct {
	Description string                       `json:"description"` // allowed, as in Claude Code plugins
	Hooks       map[string][]hookMatcherJSON `json:"hooks"`
}

type hookMatcherJSON struct {
	Matcher string            `json:"matcher"`
	Hooks   []hookCommandJSON `json:"hooks"`
}

type hookCommandJSON struct {
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Timeout float64 `json:"timeout"` // seconds
}

// toolEvent reports whether event is about a tool call, so its matchers
// apply.
func toolEvent(event string) bool { return event == PreToolUse || event == PostToolUse }

// canBlock reports whether exit code 2 stops what event is about.
func canBlock(event string) bool { return event == PreToolUse || event == UserPromptSubmit }

// LoadHooks reads <home>/.agents/hooks.json and <agentDir>/.agents/hooks.json
// (once when they are the same folder). Both apply, the home's hooks first.
// A missing file has no hooks. Any mistake in either file is an error and
// no hooks are returned: a guard the owner configured must not silently
// go missing. The hooks run in box (nil: each is refused as not isolated).
func LoadHooks(box *shell.Sandbox, homeDir, agentDir string) (*Hooks, error) {
	h := &Hooks{byEvent: map[string][]hook{}, box: box, homeDir: homeDir, agentDir: agentDir}
	for _, level := range levels(homeDir, agentDir) {
		path := filepath.Join(level, ".agents", "hooks.json")
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("kit: %w", err)
		}
		if err := h.add(path, data); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// add appends the hooks of one hooks.json.
func (h *Hooks) add(path string, data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var f hooksFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return jsonError(path, data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &fileError{path: path, msg: "trailing data after the JSON object"}
	}
	for _, event := range slices.Sorted(maps.Keys(f.Hooks)) {
		switch event {
		case UserPromptSubmit, PreToolUse, PostToolUse, Stop:
		default:
			return &fileError{path: path, msg: fmt.Sprintf("unknown hook %q; the hooks are %s, %s, %s and %s", event, UserPromptSubmit, PreToolUse, PostToolUse, Stop)}
		}
	}
	for _, event := range []string{UserPromptSubmit, PreToolUse, PostToolUse, Stop} {
		for i, m := range f.Hooks[event] {
			where := fmt.Sprintf("hooks.%s[%d]", event, i)
			var re *regexp.Regexp
			if toolEvent(event) && m.Matcher != "" && m.Matcher != "*" {
				var err error
				if re, err = regexp.Compile("^(?:" + m.Matcher + ")$"); err != nil {
					return &fileError{path: path, msg: fmt.Sprintf("%s: matcher %q is not a valid Go regular expression: %v", where, m.Matcher, err)}
				}
			}
			for j, c := range m.Hooks {
				where := fmt.Sprintf("%s.hooks[%d]", where, j)
				switch {
				case c.Type != "command":
					return &fileError{path: path, msg: fmt.Sprintf("%s: type %q is not supported; only \"command\" is", where, c.Type)}
				case strings.TrimSpace(c.Command) == "":
					return &fileError{path: path, msg: where + ": command is empty"}
				case c.Timeout < 0 || time.Duration(c.Timeout*float64(time.Second)) > MaxHookTimeout:
					return &fileError{path: path, msg: fmt.Sprintf("%s: timeout %v is not between 0 and %d seconds", where, c.Timeout, int(MaxHookTimeout/time.Second))}
				}
				timeout := time.Duration(c.Timeout * float64(time.Second))
				if timeout == 0 {
					timeout = DefaultHookTimeout
				}
				h.byEvent[event] = append(h.byEvent[event], hook{matcher: re, command: c.Command, timeout: timeout})
			}
		}
	}
	return nil
}

// jsonError locates a JSON decoding error in the file when it can.
func jsonError(path string, data []byte, err error) error {
	var offset int64 = -1
	msg := strings.TrimPrefix(err.Error(), "json: ")
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		offset = syn.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
		if typ.Type != nil {
			// The decoder's message names Go types and struct fields.
			field := typ.Field[strings.LastIndexByte(typ.Field, '.')+1:]
			msg = fmt.Sprintf("want %s, not %s", jsonKind(typ.Type), article(typ.Value))
			if field != "" {
				msg = field + ": " + msg
			}
		}
	case errors.Is(err, io.ErrUnexpectedEOF):
		offset, msg = int64(len(data)), "unexpected end of the file"
	default:
		// encoding/json does not say where an unknown field is: point at
		// the first key of that name.
		if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
			key := regexp.MustCompile(regexp.QuoteMeta(name) + `\s*:`)
			if loc := key.FindIndex(data); loc != nil {
				offset = int64(loc[0]) + 1
			}
		}
	}
	if offset < 0 {
		return &fileError{path: path, msg: msg, err: err}
	}
	line, col := lineCol(data, offset)
	return &fileError{path: path, line: line, col: col, msg: msg, err: err}
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return t.String()
	}
}

// article puts "a" or "an" before a JSON kind ("string", "array").
func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// lineCol turns the offset encoding/json reports (the bytes read when the
// error was found) into the 1-based line and column of the last byte read.
func lineCol(data []byte, offset int64) (line, col int) {
	pos := int(min(max(offset-1, 0), int64(len(data))))
	before := data[:pos]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = 1 + utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:])
	return line, col
}

// Outcome is how one hook command ended.
type Outcome struct {
	Command  string
	ExitCode int    // -1 when it could not start, timed out or was killed
	Output   string // stdout and stderr, at most 4000 characters, then any cut or kill mark
	// Blocked: the hook exited with code 2 on a PreToolUse or
	// UserPromptSubmit event, so the call or the message must not go on.
	Blocked bool
	// Reason is the hook's stderr, trimmed, when it exited with code 2 (for
	// any event), or why it could not run isolated (then it blocks like
	// exit code 2); for a block it is what the model or the owner is told.
	Reason   string
	TimedOut bool
	Duration time.Duration
}

// BlockReason reports whether any outcome blocked, with the reasons of all
// that did, one per line.
func BlockReason(outs []Outcome) (reason string, blocked bool) {
	var reasons []string
	for _, o := range outs {
		if o.Blocked {
			reasons = append(reasons, o.Reason)
		}
	}
	return strings.Join(reasons, "\n"), len(reasons) > 0
}

// Run runs every hook command of event, in order (the home's first), whose
// matcher matches tool (matchers apply to PreToolUse and PostToolUse only),
// and returns how each ended. Each runs with /bin/sh -c in dir (the
// agent's workspace; "" is the harness's own working directory) like a
// shell_run command (tools/shell: own mount and PID namespaces, the home
// hidden but for the agent's folder and the shared kits), with payload as
// JSON on stdin. Payload must encode as a
// JSON object (or be nil); Run adds "hook_event_name" and, for tool events,
// "tool_name" when the payload has none. A hook that runs past its timeout
// has its process group killed. When ctx ends, the running hook is killed
// and the rest do not run. A failing hook is an Outcome, never an error.
func (h *Hooks) Run(ctx context.Context, event, tool string, payload any, dir string) []Outcome {
	if h == nil {
		return nil
	}
	var todo []hook
	for _, hk := range h.byEvent[event] {
		if !toolEvent(event) || hk.matcher == nil || hk.matcher.MatchString(tool) {
			todo = append(todo, hk)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	stdin, err := hookInput(event, tool, payload)
	if err != nil {
		outs := make([]Outcome, len(todo))
		for i, hk := range todo {
			outs[i] = Outcome{Command: hk.command, ExitCode: -1, Output: "the hook did not run: " + err.Error()}
		}
		return outs
	}
	env := h.environ()
	// The same view of the home as the agent's shell_run commands.
	var view *shell.View
	if h.homeDir != "" {
		view = shell.HomeView(h.homeDir, h.agentDir)
	}
	var outs []Outcome
	for _, hk := range todo {
		if ctx.Err() != nil {
			break
		}
		o, stderr := runHook(ctx, h.box, hk, stdin, dir, env, view)
		if o.ExitCode == -1 && o.Reason != "" {
			o.Blocked = canBlock(event) // it could not run isolated: fail closed
		}
		if o.ExitCode == blockExitCode {
			o.Reason = cutOutput(strings.TrimSpace(stderr))
			if o.Reason == "" {
				o.Reason = fmt.Sprintf("the %s hook %q exited with code 2 without giving a reason on stderr", event, hk.command)
			}
			o.Blocked = canBlock(event)
		}
		outs = append(outs, o)
	}
	return outs
}

// environ is what hook commands see: the filtered environment shell_run
// commands get (no secrets, R-SEC-3), plus where the kits are.
func (h *Hooks) environ() []string {
	env := shell.Environ(os.Environ())
	if h.homeDir != "" {
		env = append(env, "CREW_HOME="+h.homeDir)
	}
	if h.agentDir != "" {
		env = append(env, "CREW_AGENT_DIR="+h.agentDir)
	}
	return env
}

// hookInput is the JSON a hook reads on stdin.
func hookInput(event, tool string, payload any) ([]byte, error) {
	fields := map[string]json.RawMessage{}
	if payload != nil {
		raw, err := json.Marshal(payload)
		if err != nil {
			return nil, fmt.Errorf("encode the %s payload: %w", event, err)
		}
		if t := bytes.TrimSpace(raw); string(t) != "null" {
			if len(t) == 0 || t[0] != '{' {
				return nil, fmt.Errorf("the %s payload is not a JSON object", event)
			}
			if err := json.Unmarshal(t, &fields); err != nil {
				return nil, fmt.Errorf("encode the %s payload: %w", event, err)
			}
		}
	}
	fields["hook_event_name"], _ = json.Marshal(event)
	if _, ok := fields["tool_name"]; !ok && toolEvent(event) && tool != "" {
		fields["tool_name"], _ = json.Marshal(tool)
	}
	return json.Marshal(fields) // map keys sorted: the same payload gives the same bytes
}

// cutOutput keeps the first maxHookOutput characters of s and marks the cut.
func cutOutput(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	n := utf8.RuneCountInString(s)
	if n <= maxHookOutput {
		return s
	}
	i := 0
	for j := range s {
		if i == maxHookOutput {
			return s[:j] + fmt.Sprintf("\n[… %d more characters cut]", n-maxHookOutput)
		}
		i++
	}
	return s
}
