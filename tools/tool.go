package tools

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/shell"
)

// Def declares a tool: what the model is told about it, and how the
// harness treats it.
type Def struct {
	Name        string
	Description string
	Params      json.RawMessage // a JSON Schema object
	// Default: an agent whose agent.yaml lists no tools gets this one. A
	// tool that reaches further than the agent's own folders (a browser,
	// the desktop) leaves it false, so only agents that name it get it.
	Default bool
	// Uncut: the tool pages through its own output (tool_output_read), so
	// the loop never cuts it to tool_output_chars.
	Uncut bool
}

// Call is one tool call the model made.
type Call struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// Result is what a call produced. Output is the text the model reads;
// IsError marks a failure the model should see and handle (see the package
// doc); it is not a harness error. Parts carry what a call produced beside
// its text — a screenshot, a desktop frame, a file it made — and Meta is
// structured detail for the harness and the UI (a canvas card's fields, a
// page's URL). The loop records both with the call's result (an image's
// bytes in the spill folder, never in the log); most tools set neither.
type Result struct {
	Output  string
	IsError bool
	Parts   []Part
	Meta    map[string]any // JSON-encodable values only
	// Canvas is the canvas a canvas tool read or wrote; the loop records
	// it with the result (events.ToolCompleted.Canvas).
	Canvas *events.CanvasRef
}

// Kinds of result parts.
const (
	PartText  = "text"
	PartImage = "image"
	PartFile  = "file"
)

// Part is one piece of a result beside its text.
type Part struct {
	Kind string // PartText, PartImage or PartFile
	Text string // PartText
	MIME string // PartImage: image/png, image/jpeg…; PartFile: when known
	// Data is an image's bytes; the loop keeps them in the spill folder.
	Data []byte
	// Path is a file relative to the workspace (PartFile), or an image
	// already kept (a replayed result).
	Path string
}

// TextPart, ImagePart and FilePart build parts.
func TextPart(text string) Part               { return Part{Kind: PartText, Text: text} }
func ImagePart(mime string, data []byte) Part { return Part{Kind: PartImage, MIME: mime, Data: data} }
func FilePart(path, mime string) Part         { return Part{Kind: PartFile, Path: path, MIME: mime} }

// Env is what a call runs against: the facts of this one call. Services
// a tool uses beyond them (the home's secrets, the background runner, the
// persona proposer, the clock and the owner's timezone) are given to its
// constructor once, when the App builds the registry (Services).
type Env struct {
	Workspace    string // absolute path of the agent's workspace
	AgentID      string // the agent making the call
	Conversation string
	SpillDir     string // <home>/spill/<conversation>: Spills in files when Spills is nil
	// Spills keep the conversation's cut outputs and result images
	// (crew serve's: the log's object store).
	Spills Spills
	Agent  AgentPolicy
	// AgentDir is the agent's folder (MEMORY.md, memory/, skills/, .agents/)
	// and HomeDir the home (users/owner/, wiki/, skills/, .agents/): only
	// the memory, wiki and skill tools use them, never a path argument.
	AgentDir string
	HomeDir  string
	// Canvas is what the canvas tools need of the turn (R-CAN).
	Canvas CanvasTurn
	// Provenance of the call (R-X-7): the run and tool call making it,
	// and what untrusted content the run read before it ("" for none).
	RunID, CallID string
	Untrusted     string
}

// Services are what tools use beyond a call's facts, given to the tool
// families' constructors once (cmd/crew/app builds the registry): tools
// keep the ones they use. A nil service refuses what needs it.
type Services struct {
	// Secrets are the home's secrets (its log's redactor): what a tool
	// writes to a file is redacted with them (WriteAtomic); nil knows none.
	Secrets *events.Redactor
	// Background starts shell_run's background commands and stops them
	// (task_stop); nil: run_in_background is refused.
	Background Backgrounder
	// Sandbox starts every child process a tool causes (shell_run, the
	// PDF extractor); nil: none starts.
	Sandbox *shell.Sandbox
	// Proposer files a write to the agent's AGENTS.md or SOUL.md as a
	// proposal for the owner (R-X-7); nil: such writes are refused.
	Proposer Proposer
	Clock    func() time.Time // nil means time.Now
	Location *time.Location   // the owner's timezone; nil means UTC
}

// Loc returns the owner's timezone.
func (s Services) Loc() *time.Location {
	if s.Location == nil {
		return time.UTC
	}
	return s.Location
}

// Now returns the time by the services' clock, in the owner's timezone.
func (s Services) Now() time.Time {
	if s.Clock == nil {
		return time.Now().In(s.Loc())
	}
	return s.Clock().In(s.Loc())
}

// Backgrounder runs a command after its call has returned and reports its
// end on the conversation as a task_notification (R-TEAM §8). Start
// returns the task's id once the command is started; Stop kills a task of
// env's conversation (task_stop), refusing any other.
type Backgrounder interface {
	Start(env Env, c shell.Command) (taskID string, err error)
	Stop(ctx context.Context, env Env, taskID string) (Result, error)
}

// UntrustedMark is what a memory write made after untrusted content
// carries: "(from untrusted content, run <id>)"; "" when the run read
// none.
func (e Env) UntrustedMark() string {
	if e.Untrusted == "" {
		return ""
	}
	return "(from untrusted content, run " + e.RunID + ")"
}

// Provenance is what a memory, fact or wiki write records with its result
// (Result.Meta "provenance"): the run and call that wrote it, and the
// untrusted content the run had read, if any.
func (e Env) Provenance(path string) map[string]any {
	p := map[string]any{"path": path, "run_id": e.RunID, "call_id": e.CallID}
	if e.Untrusted != "" {
		p["untrusted"] = e.Untrusted
	}
	return map[string]any{"provenance": p}
}

// CanvasTurn is the turn's side of the canvas rules, folded from the
// conversation: where it came from, what it has seen, what it wrote.
type CanvasTurn struct {
	RunID string
	// Channel is the conversation's channel, or its delegation root's
	// ("api" turns cannot write canvases); RootID the root conversation
	// of a delegated one ("" for a root).
	Channel string
	RootID  string
	// Seen maps a canvas to the version this conversation knows whole.
	Seen map[string]int
	// Created counts the canvases this run created; Writes the writes of
	// this run per canvas.
	Created int
	Writes  map[string]int
}

// AgentPolicy is the part of an agent's config that tools consult:
// agent.yaml's shell, browser and computer keys, by their yaml names
// (loop.Agent inlines it).
//
// The shell patterns are Go regular expressions (RE2 syntax, see
// regexp/syntax), matched unanchored against the whole command string: use
// ^ and $ to anchor. Deny patterns refuse a command before anything runs;
// ask patterns make a call ask for approval; allow patterns make a call
// routine, but only for a simple command (no ; & | ` $( > < or newline),
// so "^git status" cannot wave through "git status; rm -rf ~". An invalid
// deny pattern refuses every command and an invalid ask pattern asks for
// every command (fail closed); invalid allow patterns never match.
// Validate patterns when loading config with ValidatePolicy.
type AgentPolicy struct {
	ShellAskPatterns   []string `yaml:"shell_ask_patterns"`
	ShellAllowPatterns []string `yaml:"shell_allow_patterns"`
	ShellDenyPatterns  []string `yaml:"shell_deny_patterns"`
	// ShellNetwork false runs shell commands sandboxed without network; nil
	// or true leaves the network alone.
	ShellNetwork *bool `yaml:"shell_network"`
	// ShellWritePaths, when set, runs shell commands sandboxed: they may
	// write only beneath the workspace, these paths (relative ones are taken
	// from the workspace) and a private temp dir.
	ShellWritePaths []string `yaml:"shell_write_paths"`
	// Browser is agent.yaml's browser: "read", "act", or "" (no browser
	// tools). BrowserHosts are the hosts browser_navigate visits without
	// asking (a name matches itself and its subdomains; host:port only
	// that port); BrowserAskPatterns are regular expressions, matched
	// case-insensitively against an element's name, that make browser_act
	// and browser_download ask, in addition to the built-in ones.
	Browser            string   `yaml:"browser"`
	BrowserHosts       []string `yaml:"browser_hosts"`
	BrowserAskPatterns []string `yaml:"browser_ask_patterns"`
	// ComputerApps are the apps computer_act may touch (agent.yaml
	// computer_apps): X11 WM_CLASS class names or executable base names.
	ComputerApps []string `yaml:"computer_apps"`
}

// A Grant is the tools an agent.yaml key gives beside tools:, declared by
// the key's feature (browser.Grant, team.Grant, desktop.Grant). Family,
// when set, is the prefix of the tools the key alone gives: listed under
// tools:, they do not count.
type Grant struct {
	Names  []string
	Family string
}

// Tool is one callable tool.
type Tool interface {
	Def() Def
	// Run executes one call. See the package doc for Result versus error.
	Run(ctx context.Context, env Env, args json.RawMessage) (Result, error)
}

// Gated is implemented by tools that change things and so need approval in
// a supervised conversation (the seed's table).
type Gated interface {
	NeedsApproval() bool
}

// Reader is implemented by tools that only read: a built-in that changes
// nothing, or an MCP tool the owner listed in read_only_tools. A script
// calls only these unless its agent has script_calls: gated (R-SCR); a
// tool that does not say so is taken to change things, even one that
// needs no approval (a canvas write, a memory note).
type Reader interface {
	ReadOnly() bool
}

// ReadOnly reports whether t only reads.
func ReadOnly(t Tool) bool {
	r, ok := t.(Reader)
	return ok && r.ReadOnly()
}

// Asker is implemented by tools some of whose calls must always ask. A
// non-empty reason is shown on the approval card.
type Asker interface {
	AskWhen(env Env, args json.RawMessage) (reason string)
}

// Allower is implemented by tools some of whose calls are routine and run
// even in a supervised conversation.
type Allower interface {
	AllowWhen(env Env, args json.RawMessage) bool
}

// Checker is implemented by tools that can tell, before anything runs or
// anyone is asked, that a call would be refused anyway: arguments that do
// not decode, a path outside the workspace, a command a deny pattern
// refuses. The error's text is the result the model reads, the same text
// Run would give. Check changes nothing; Run checks again.
type Checker interface {
	Check(env Env, args json.RawMessage) error
}

// Check returns why a call of t would be refused, or nil: the tool's own
// Checker, then the arguments against the tool's declared schema (a
// required property missing, a property of the wrong JSON type, one the
// schema does not allow), so that nobody is asked to approve a call its
// tool or server would only refuse (issue 26).
func Check(t Tool, env Env, args json.RawMessage) error {
	if c, ok := t.(Checker); ok {
		if err := c.Check(env, args); err != nil {
			return err
		}
	}
	d := t.Def()
	return CheckArgs(d.Name, d.Params, args)
}

// refusal is a Check failure: res's text.
func refusal(res Result) error { return errors.New(res.Output) }

// NeedsApproval reports whether t needs approval unless a call is routine.
func NeedsApproval(t Tool) bool {
	g, ok := t.(Gated)
	return ok && g.NeedsApproval()
}

// AskReason returns why this call must ask, or "" when it need not.
func AskReason(t Tool, env Env, args json.RawMessage) string {
	if a, ok := t.(Asker); ok {
		return a.AskWhen(env, args)
	}
	return ""
}

// Routine reports whether this call runs without asking.
func Routine(t Tool, env Env, args json.RawMessage) bool {
	a, ok := t.(Allower)
	return ok && a.AllowWhen(env, args)
}
