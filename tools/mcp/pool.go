// Package mcp is the crew's MCP client: the servers config.yaml declares
// (mcp_servers), reached over streamable HTTP or started as a sandboxed
// command speaking stdio (Stdio), with the official SDK, and
// their tools as registry-shaped tools named mcp__<server>__<tool> (R-MCP).
//
// A Pool holds one session per server, opened on first use and opened
// again after it breaks. A server's tool list is kept from its last good
// listing and listed again when the server says it changed
// (notifications/tools/list_changed, debounced) or a session is opened
// anew; a server that does not answer leaves its last list in place, so a
// call to one of its tools gets a result that says the server is down
// rather than "unknown tool".
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/shell"
)

// Server is one entry of config.yaml mcp_servers, its header values
// already resolved from the env (${VAR}).
type Server struct {
	Name     string
	URL      string // streamable HTTP; empty for a stdio server
	Stdio    *Stdio // a command the crew starts; nil for an HTTP server
	Headers  map[string]string
	ReadOnly []string // tool names as the server gives them: run without asking
	Hidden   []string // never offered
	Timeout  time.Duration
	// AutonomousRun (config autonomous: run): its tools that are not
	// read-only run unasked in autonomous conversations; without it they
	// carry an ask reason, so they ask in every seat (R-GATE-5).
	AutonomousRun bool
	// OAuth is the entry's oauth: (a configured client, scopes); nil: a
	// login registers the crew dynamically where it can.
	OAuth *OAuth
	// TokenFile is where crew mcp login keeps the server's grant (an HTTP
	// server; "": it never logs in, a 401 is only refused).
	TokenFile string
}

// Limits and pacing.
const (
	DefaultTimeout = 60 * time.Second       // one call
	listTimeout    = 10 * time.Second       // connect and list
	retryAfter     = 15 * time.Second       // a server that failed is not tried again sooner
	debounce       = 250 * time.Millisecond // list_changed bursts
	protocol       = "2025-11-25"           // skips the SDK's stateless probe, which servers of today refuse
)

func (s Server) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultTimeout
}

// Transport is "stdio" or "streamable HTTP".
func (s Server) Transport() string {
	if s.Stdio != nil {
		return "stdio"
	}
	return "streamable HTTP"
}

// Where names the server for the owner: its URL or its command, redacted
// with r.
func (s Server) Where(r *events.Redactor) string {
	if s.Stdio != nil {
		return r.String(strings.Join(s.Stdio.Command, " "))
	}
	return events.RedactURL(s.URL)
}

func (s Server) same(o Server) bool {
	return s.Name == o.Name && s.URL == o.URL && s.Stdio.String() == o.Stdio.String() && s.Timeout == o.Timeout && s.AutonomousRun == o.AutonomousRun &&
		fmt.Sprint(s.Headers) == fmt.Sprint(o.Headers) && fmt.Sprint(s.OAuth) == fmt.Sprint(o.OAuth) && s.TokenFile == o.TokenFile &&
		slices.Equal(s.ReadOnly, o.ReadOnly) && slices.Equal(s.Hidden, o.Hidden)
}

// Pool is the crew's MCP servers.
type Pool struct {
	version string
	box     *shell.Sandbox // starts the stdio servers
	logger  *slog.Logger
	clock   func() time.Time

	mu        sync.Mutex
	servers   map[string]*server
	onRestart func(Restart)
	secrets   *events.Redactor
}

// OnRestart sets what is told of each restart of a stdio server in place
// of PoolConfig.Restarts; call it before first use.
func (p *Pool) OnRestart(f func(Restart)) { p.onRestart = f }

// PoolConfig is what a pool is built from.
type PoolConfig struct {
	Version string // the client version the servers are told
	Servers []Server
	// Sandbox is where the stdio servers start (nil: none starts).
	Sandbox *shell.Sandbox
	// Secrets (the home's) redact what the pool says of its servers:
	// their commands, how they ended, their stderr (nil: nothing is).
	Secrets *events.Redactor
	// Restarts is the log each restart of a stdio server is stored in, as
	// mcp_server_restarted on the server's scope (events.MCP); one not
	// stored is logged. nil (a read-only crew): none is stored.
	Restarts *events.Log
	Logger   *slog.Logger
}

// NewPool returns a pool over c's servers; nothing connects until used.
func NewPool(c PoolConfig) *Pool {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pool{version: c.Version, box: c.Sandbox, logger: c.Logger, clock: time.Now, secrets: c.Secrets, servers: map[string]*server{}}
	if c.Restarts != nil {
		p.onRestart = p.record(c.Restarts)
	}
	p.Configure(c.Servers)
	return p
}

// record stores a restart in log.
func (p *Pool) record(log *events.Log) func(Restart) {
	return func(r Restart) {
		env, err := events.New(&events.MCPServerRestarted{Server: r.Server, Restarts: r.Restarts, Reason: r.Reason})
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = log.Append(ctx, events.MCP(r.Server), events.Any, env)
		}
		if err != nil {
			p.logger.Warn("MCP server restart not stored", "server", r.Server, "err", err)
		}
	}
}

// Configure replaces the declared servers: one whose declaration changed
// or went is closed; the others keep their sessions.
func (p *Pool) Configure(servers []Server) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := map[string]*server{}
	for _, cfg := range servers {
		if old, ok := p.servers[cfg.Name]; ok && old.cfg.same(cfg) {
			next[cfg.Name] = old
			continue
		}
		next[cfg.Name] = &server{cfg: cfg, pool: p}
	}
	for name, old := range p.servers {
		if next[name] != old {
			go old.close()
		}
	}
	p.servers = next
}

// Close ends every session; a nil pool (a crew whose wiring failed
// before it) has none.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	old := p.servers
	p.servers = map[string]*server{}
	p.mu.Unlock()
	for _, s := range old {
		s.close()
	}
}

// Names are the declared servers, sorted.
func (p *Pool) Names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for n := range p.servers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Has reports whether name is a declared server.
func (p *Pool) Has(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.servers[name]
	return ok
}

func (p *Pool) server(name string) *server {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.servers[name]
}

// Tools are the tools of the named servers that may be offered, sorted by
// name: hidden ones and both of a collision are left out. A server never
// listed is connected to (bounded by listTimeout). problems says which
// servers could not be listed and which names collided.
func (p *Pool) Tools(ctx context.Context, servers []string) (out []tools.Tool, problems []error) {
	type entry struct {
		t    *Tool
		from string
	}
	byName := map[string]entry{}
	collided := map[string]bool{}
	for _, name := range servers {
		s := p.server(name)
		if s == nil {
			problems = append(problems, fmt.Errorf("MCP server %q is not declared in config.yaml mcp_servers", name))
			continue
		}
		list, err := s.tools(ctx)
		if err != nil {
			problems = append(problems, err)
		}
		for _, t := range list {
			from := s.cfg.Name + "/" + t.remote
			if e, dup := byName[t.name]; dup {
				problems = append(problems, Collision{Name: t.name, First: e.from, Second: from})
				collided[t.name] = true
				continue
			}
			byName[t.name] = entry{t, from}
		}
	}
	for n, e := range byName {
		if !collided[n] {
			out = append(out, e.t)
		}
	}
	slices.SortFunc(out, func(a, b tools.Tool) int { return strings.Compare(a.Def().Name, b.Def().Name) })
	return out, problems
}

// Lookup finds an offered tool by its registered name among the named
// servers. A name of one of those servers that its last list does not
// hold, while the server does not answer, is a tool that answers so.
func (p *Pool) Lookup(ctx context.Context, servers []string, name string) (tools.Tool, bool) {
	list, _ := p.Tools(ctx, servers)
	for _, t := range list {
		if t.Def().Name == name {
			return t, true
		}
	}
	srv, ok := ServerOf(name)
	if !ok || !slices.Contains(servers, srv) {
		return nil, false
	}
	s := p.server(srv)
	if s == nil {
		return nil, false
	}
	if err := s.lastErr(); err != nil {
		return downTool{name: name, err: err}, true
	}
	if s.wasListed(name) {
		return goneTool{name: name, server: srv}, true
	}
	return nil, false
}

// Status is what crew doctor reports of one server.
type Status struct {
	Name      string
	URL       string   // or the stdio command
	Transport string   // "stdio" or "streamable HTTP"
	Restarts  int      // stdio: restarts since it last stayed up
	Err       error    // nil: it answered
	Tools     []string // offered, by the server's names
	ReadOnly  []string // of those, the owner's read-only ones
	Hidden    int
	Problems  []string // collisions within the server, read_only_tools it does not have
	LoggedIn  bool     // it answered with a stored OAuth login
}

// Status connects to every declared server and lists its tools.
func (p *Pool) Status(ctx context.Context) []Status {
	var out []Status
	for _, name := range p.Names() {
		s := p.server(name)
		st := Status{Name: name, URL: s.cfg.Where(p.secrets), Transport: s.cfg.Transport()}
		list, probs := p.Tools(ctx, []string{name})
		st.Restarts = s.restartCount()
		s.mu.Lock()
		auth, failed := s.auth, s.err != nil
		s.mu.Unlock()
		st.LoggedIn = !failed && auth.loggedIn()
		if err := s.lastErr(); err != nil {
			st.Err = err
		}
		have := map[string]bool{}
		for _, t := range list {
			mt := t.(*Tool)
			have[mt.remote] = true
			st.Tools = append(st.Tools, mt.remote)
			if mt.readOnly {
				st.ReadOnly = append(st.ReadOnly, mt.remote)
			}
		}
		for _, e := range probs {
			if st.Err == nil || e != st.Err {
				st.Problems = append(st.Problems, e.Error())
			}
		}
		if st.Err == nil {
			for _, ro := range s.cfg.ReadOnly {
				if !have[ro] && !slices.Contains(s.cfg.Hidden, ro) {
					st.Problems = append(st.Problems, fmt.Sprintf("read_only_tools names %q, which the server does not offer", ro))
				}
			}
		}
		st.Hidden = len(s.cfg.Hidden)
		out = append(out, st)
	}
	return out
}

// server is one declared server and its session.
type server struct {
	cfg  Server
	pool *Pool

	mu       sync.Mutex
	auth     *oauthHandler // an HTTP server's stored login, if it has a TokenFile
	cs       *sdk.ClientSession
	list     []*Tool // from the last good listing
	refused  []error // tools of that listing not offered, and why
	listed   bool
	err      error // why the last connect, listing or call failed; nil after a good one
	failedAt time.Time
	timer    *time.Timer
	closed   bool
	// stdio
	lastEnd  string          // how the process before the running one ended
	ever     map[string]bool // registered names of every listing so far
	proc     *proc           // the last process started
	restarts int             // since it last stayed up (the backoff's count)
	total    int             // restarts since the crew started
}

// State is what the running crew says of one server without reaching it
// (GET /api/mcp, crew doctor beside a running server).
type State struct {
	Name      string `json:"name"`
	Transport string `json:"transport"` // "stdio" or "streamable HTTP"
	Where     string `json:"where"`     // the URL or the command, redacted
	// State: "not started" (never used), "running" (a session is open),
	// "idle" (listed before, no session now), "down" (the last connect,
	// listing or call failed: Error says why), "needs login" (it asks for
	// OAuth and no usable login is stored: Error says to run crew mcp
	// login <name>).
	State    string `json:"state"`
	Tools    int    `json:"tools"`    // in its last good listing
	Restarts int    `json:"restarts"` // stdio: restarts since the crew started
	// LastEnded is how its last process ended (stdio; "" while the first
	// one runs).
	LastEnded string `json:"last_ended,omitempty"`
	Error     string `json:"error,omitempty"`
}

// States is every declared server's state, without connecting to any.
func (p *Pool) States() []State {
	var out []State
	for _, name := range p.Names() {
		s := p.server(name)
		st := State{Name: name, Transport: s.cfg.Transport(), Where: s.cfg.Where(p.secrets), State: "not started"}
		s.mu.Lock()
		st.Tools, st.Restarts = len(s.list), s.total
		if s.proc != nil {
			select {
			case <-s.proc.done:
				st.LastEnded = s.proc.end
			default:
			}
		}
		switch {
		case s.needsLoginLocked():
			st.State, st.Error = "needs login", "needs login: run crew mcp login "+name
		case s.err != nil:
			st.State, st.Error = "down", p.secrets.String(s.err.Error())
		case s.cs != nil:
			st.State = "running"
		case s.listed:
			st.State = "idle"
		}
		if st.LastEnded == "" && s.proc != nil && s.total > 0 {
			st.LastEnded = s.lastEnd
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	return out
}

func (s *server) restartCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// wasListed: name was in one of the server's listings since the crew
// started.
func (s *server) wasListed(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ever[name]
}

func (s *server) lastErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *server) close() {
	s.mu.Lock()
	cs := s.cs
	s.cs, s.closed = nil, true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.stopProcLocked()
	s.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
}

// tools is the server's last list, listing it first when it never was
// (and did not fail moments ago).
func (s *server) tools(ctx context.Context) ([]*Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.needsLoginLocked():
		if s.auth.changed() { // crew mcp login stored a grant since
			s.relistLocked(ctx)
		}
	case !s.listed && (s.err == nil || s.pool.clock().Sub(s.failedAt) >= retryAfter):
		s.relistLocked(ctx)
	}
	if s.needsLoginLocked() {
		return nil, s.err // not offered until the owner logs in
	}
	if s.err == nil && len(s.refused) > 0 {
		return s.list, errors.Join(s.refused...)
	}
	return s.list, s.err
}

// relistLocked connects if need be and lists the tools; s.mu is held.
func (s *server) relistLocked(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, min(listTimeout, s.cfg.timeout()))
	defer cancel()
	cs, err := s.sessionLocked(ctx)
	if err == nil {
		var list []*Tool
		var refused []error
		list, refused, err = s.fetch(ctx, cs)
		if err == nil {
			s.list, s.refused, s.listed, s.err = list, refused, true, nil
			if s.ever == nil {
				s.ever = map[string]bool{}
			}
			for _, t := range list {
				s.ever[t.name] = true
			}
			return
		}
		s.dropLocked(cs)
	}
	s.fail(err)
}

func (s *server) fail(err error) {
	var nl NeedsLogin
	if errors.As(err, &nl) {
		s.err, s.failedAt = NeedsLogin{Server: s.cfg.Name}, s.pool.clock()
		if s.auth != nil {
			s.auth.mark()
		}
		return
	}
	s.err = fmt.Errorf("MCP server %q (%s) is not answering: %v", s.cfg.Name, s.cfg.Where(s.pool.secrets), oneLine(err))
	s.failedAt = s.pool.clock()
}

// fetch lists every tool of the session; refused are those not offered
// (an input schema the model could be misled by), with why.
func (s *server) fetch(ctx context.Context, cs *sdk.ClientSession) (out []*Tool, refused []error, err error) {
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, err
		}
		if slices.Contains(s.cfg.Hidden, t.Name) {
			continue
		}
		tool, err := s.tool(t)
		if err != nil {
			refused = append(refused, err)
			continue
		}
		out = append(out, tool)
	}
	slices.SortFunc(out, func(a, b *Tool) int { return strings.Compare(a.name, b.name) })
	return out, refused, nil
}

// sessionLocked returns the open session or opens one; s.mu is held.
func (s *server) sessionLocked(ctx context.Context) (*sdk.ClientSession, error) {
	if s.closed {
		return nil, errors.New("the server's declaration changed or the crew is stopping")
	}
	if s.cs != nil && s.procEndedLocked() {
		s.dropLocked(s.cs) // a stdio server whose process ended: start it again
	}
	if s.cs != nil {
		return s.cs, nil
	}
	cl := sdk.NewClient(&sdk.Implementation{Name: "my-agent-crew", Version: s.pool.version}, &sdk.ClientOptions{
		Capabilities:           &sdk.ClientCapabilities{}, // no roots: the crew has none to give
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { s.changed() },
	})
	var tr sdk.Transport
	if s.cfg.Stdio != nil {
		var err error
		if tr, err = s.startLocked(); err != nil {
			return nil, err
		}
	} else {
		t := &sdk.StreamableClientTransport{
			Endpoint:   s.cfg.URL,
			HTTPClient: &http.Client{Transport: headers{s.cfg.Headers, hostOf(s.cfg.URL), http.DefaultTransport}},
			MaxRetries: 2,
		}
		if h := s.oauthLocked(); h != nil {
			t.OAuthHandler = h
		}
		tr = t
	}
	cs, err := cl.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		if s.cfg.Stdio != nil {
			err = s.whyLocked(err)
			s.stopProcLocked()
		}
		return nil, err
	}
	s.cs = cs
	s.listed = false // a new session: its tools are listed again
	return cs, nil
}

// oauthLocked is the server's login handler (nil for one without a
// TokenFile); s.mu is held.
func (s *server) oauthLocked() *oauthHandler {
	if s.auth == nil && s.cfg.URL != "" && s.cfg.TokenFile != "" {
		s.auth = &oauthHandler{name: s.cfg.Name, path: s.cfg.TokenFile, secrets: s.pool.secrets, client: &http.Client{Timeout: listTimeout}, clock: s.pool.clock}
	}
	return s.auth
}

// needsLoginLocked: the server's last failure was "needs login"; s.mu is
// held.
func (s *server) needsLoginLocked() bool {
	var nl NeedsLogin
	return errors.As(s.err, &nl)
}

func (s *server) dropLocked(cs *sdk.ClientSession) {
	if s.cs == cs && cs != nil {
		s.cs = nil
		go cs.Close()
	}
}

// changed lists the tools again once a burst of list_changed settles.
func (s *server) changed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timer = time.AfterFunc(debounce, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.closed && s.cs != nil {
			s.relistLocked(context.Background())
		}
	})
}

// call runs one tool of the server. A session that broke is opened again
// and the call tried once more only when the server cannot have seen it
// (refused connection, unknown session); otherwise the result says it may
// or may not have taken effect.
func (s *server) call(ctx context.Context, remote string, args map[string]any) (tools.Result, error) {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.timeout())
	defer cancel()
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		cs, err := s.sessionLocked(cctx)
		if err != nil {
			s.fail(err)
			e := s.err
			s.mu.Unlock()
			if ctx.Err() != nil {
				return tools.Result{}, ctx.Err()
			}
			return tools.Failf("%v. The call of %s was not run; nothing changed on that server. Go on without it or try later.", e, remote), nil
		}
		s.mu.Unlock()
		res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: remote, Arguments: args})
		if err == nil {
			s.mu.Lock()
			s.err = nil
			s.mu.Unlock()
			return convert(s.cfg.Name, remote, res), nil
		}
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err() // the turn is stopping
		}
		var nl NeedsLogin
		if errors.As(err, &nl) {
			s.mu.Lock()
			s.fail(err)
			e := s.err
			s.mu.Unlock()
			return tools.Failf("%v. The call of %s was not run; nothing changed on that server. Go on without it.", e, remote), nil
		}
		var rpc interface{ ErrorCode() int64 }
		if errors.As(err, &rpc) {
			return tools.Failf("MCP server %q refused the call of %s: %v", s.cfg.Name, remote, oneLine(err)), nil
		}
		s.mu.Lock()
		s.dropLocked(cs)
		s.mu.Unlock()
		if cctx.Err() != nil {
			return tools.Failf("MCP server %q did not answer the call of %s within %s; it may or may not have taken effect.", s.cfg.Name, remote, s.cfg.timeout()), nil
		}
		if attempt == 0 && unsent(err) {
			continue
		}
		s.mu.Lock()
		s.fail(err)
		e := s.err
		s.mu.Unlock()
		if unsent(err) {
			return tools.Failf("%v. The call of %s was not run; nothing changed on that server. Go on without it or try later.", e, remote), nil
		}
		return tools.Failf("%v. The call of %s may or may not have taken effect.", e, remote), nil
	}
}

// unsent: the server cannot have run the request.
func unsent(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, sdk.ErrSessionMissing) || errors.Is(err, sdk.ErrConnectionClosed) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) // a stdio server's pipe: the request was not written
}

// headers adds the declared headers to every request.
// headers adds the declared headers to every request to the declared
// URL's host, and to no other: a redirect elsewhere does not carry them.
type headers struct {
	h    map[string]string
	host string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.h) > 0 && r.URL.Host == h.host {
		r = r.Clone(r.Context())
		for k, v := range h.h {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// hostOf is raw's host[:port] as a request's URL.Host spells it.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// downTool stands for a tool of a server that does not answer and whose
// list is not known: a call says so.
type downTool struct {
	name string
	err  error
}

func (d downTool) Def() tools.Def {
	return tools.Def{Name: d.name, Description: "A tool of an MCP server that is not answering.", Params: json.RawMessage(`{"type":"object"}`)}
}

func (d downTool) NeedsApproval() bool { return true }

// AskWhen: a tool whose server is down is refused by Check before the
// gate; were it not, it would ask.
func (d downTool) AskWhen(tools.Env, json.RawMessage) string { return askReason }

func (d downTool) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Failf("%s", d.Check(tools.Env{}, nil)), nil
}

// goneTool is a tool the server offered once and no longer lists (it sent
// tools/list_changed, or a new session listed without it): a call answers
// so instead of "unknown tool", before anyone is asked.
type goneTool struct{ name, server string }

func (g goneTool) Def() tools.Def {
	return tools.Def{Name: g.name, Description: "A tool its MCP server no longer offers.", Params: json.RawMessage(`{"type":"object"}`)}
}

func (g goneTool) NeedsApproval() bool                       { return true }
func (g goneTool) AskWhen(tools.Env, json.RawMessage) string { return askReason }
func (g goneTool) Check(tools.Env, json.RawMessage) error {
	return fmt.Errorf("%s is no longer offered by %s: it left the server's tool list. The call was not run; tool_search lists what the server offers now", g.name, g.server)
}

func (g goneTool) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Failf("%s", g.Check(tools.Env{}, nil)), nil
}

// Check refuses before anyone is asked to approve a call that cannot run.
func (d downTool) Check(tools.Env, json.RawMessage) error {
	return fmt.Errorf("%v. The call was not run; nothing changed on that server. Go on without it or try later", d.err)
}
