// Package mcpserver is the crew as an MCP server (R-X-15): the tools an
// MCP client — a desktop assistant, an editor — uses to hand the crew a
// task and follow it, over streamable HTTP at /mcp (Handler) or over
// stdio through crew mcp serve, which relays to a running server's /mcp.
//
// Every crew_send is an inbound message on channel "mcp" from the client's
// name, through the same gateways/inbound as the web and Telegram: the
// same queue, limits and budgets. Approvals and answers to questions are
// never offered here: a run that needs one says so, and waits for the
// owner on the web or Telegram.
package mcpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.etcd.io/bbolt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
)

// Channel is the channel of every message the MCP server stores.
const Channel = "mcp"

// Limits of one call.
const (
	DefaultWait = 60 * time.Second  // crew_send waits this long for the run's end
	MaxWait     = 600 * time.Second // timeout_seconds at most
	maxText     = 4000              // characters of one message crew_read returns
	maxList     = 200               // conversations crew_conversations lists
)

// Receiver stores an inbound message (gateways/inbound.Inbound).
type Receiver interface {
	Receive(ctx context.Context, m inbound.Message) (inbound.Accepted, error)
}

// Stopper stops a conversation's run and queue (loop.Worker via the App).
type Stopper interface {
	Stop(ctx context.Context, conversation, scope, by string) (loop.Stopped, error)
}

// Config is what the server reads and writes.
type Config struct {
	Log     *events.Log
	DB      *bbolt.DB   // the projections: conversations and their status
	Convs   *loop.Convs // a conversation's history
	Inbound Receiver
	Stops   Stopper // nil: no crew_stop
	// Fresh is the projections' read-your-writes (the Runner); nil reads
	// what they have.
	Fresh   projections.Freshness
	Home    string // for the notices of runs that did not end done
	Version string
	Logger  *slog.Logger
}

// Handler is /mcp: streamable HTTP, a request without "Authorization:
// Bearer <token>" answered 401 (whatever else authenticated it: a browser
// session is not enough), failures slowed.
func Handler(cfg Config, token string) http.Handler {
	srv := New(cfg)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Logger: cfg.Logger, SessionTimeout: 30 * time.Minute,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token == "" || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			time.Sleep(250 * time.Millisecond) // a guesser waits; the owner's client never does
			w.Header().Set("WWW-Authenticate", `Bearer realm="crew"`)
			http.Error(w, `{"error":{"code":"unauthorized","message":"send Authorization: Bearer <the home's token>"}}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// New is the MCP server with the crew's tools.
func New(cfg Config) *sdk.Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := &gateway{cfg: cfg}
	s := sdk.NewServer(&sdk.Implementation{Name: "my-agent-crew", Version: cfg.Version}, &sdk.ServerOptions{
		Instructions: "The owner's crew of agents. crew_send hands one of them a task (the master by default) and returns its reply when the run ends in time, " +
			"else the conversation and run ids to follow with crew_status and crew_read. Approvals and questions are answered by the owner on the web or Telegram, never here.",
	})
	sdk.AddTool(s, &sdk.Tool{Name: "crew_send", Description: "Send a message to an agent of the crew (default: the master) and wait for its reply. " +
		"Without conversation it goes to the agent's conversation of the day on this channel. Returns the reply when the run ends within timeout_seconds (default 60), " +
		"else the conversation and run ids; progress is reported while it runs. A run that needs the owner's approval or answer says so: the owner decides on the web or Telegram."}, g.send)
	sdk.AddTool(s, &sdk.Tool{Name: "crew_conversations", Description: "List the crew's conversations, most recently updated first, optionally those whose title, agent, channel or id contains query.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, g.conversations)
	sdk.AddTool(s, &sdk.Tool{Name: "crew_read", Description: "Read a conversation's messages (the owner's, the agents' replies, and the tools called), from message index since (default 0); next is the index to read from later.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, g.read)
	sdk.AddTool(s, &sdk.Tool{Name: "crew_status", Description: "A conversation's status: idle, running, awaiting_approval or awaiting_answer, its open runs, waiting messages and what waits for the owner.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, g.status)
	if cfg.Stops != nil {
		sdk.AddTool(s, &sdk.Tool{Name: "crew_stop", Description: "Stop a conversation's running turn (and the delegated children under it) and drop the messages waiting behind it, as the owner's Stop does."}, g.stop)
	}
	return s
}

type gateway struct{ cfg Config }

// SendArgs are crew_send's arguments.
type SendArgs struct {
	Text           string `json:"text" jsonschema:"the message"`
	Agent          string `json:"agent,omitempty" jsonschema:"the agent's id (default: the master)"`
	Conversation   string `json:"conversation,omitempty" jsonschema:"a conversation id to continue (default: the agent's conversation of the day on channel mcp)"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait for the run's end (default 60, at most 600)"`
}

// SendResult is crew_send's structured result.
type SendResult struct {
	ConversationID string `json:"conversation_id"`
	RunID          string `json:"run_id,omitempty"`
	// Status: done, halted, failed, stopped (the run's end), running (not
	// ended within the wait), awaiting_approval or awaiting_answer (it
	// waits for the owner), steered (taken in by the running turn).
	Status string `json:"status"`
	Reply  string `json:"reply,omitempty"`
}

func (g *gateway) send(ctx context.Context, req *sdk.CallToolRequest, in SendArgs) (*sdk.CallToolResult, SendResult, error) {
	wait := DefaultWait
	if in.TimeoutSeconds > 0 {
		wait = min(time.Duration(in.TimeoutSeconds)*time.Second, MaxWait)
	}
	client := clientName(req.Session)
	acc, err := g.cfg.Inbound.Receive(ctx, inbound.Message{Text: in.Text, Channel: Channel, Agent: in.Agent, ConversationID: in.Conversation, From: client})
	if err != nil {
		return refusal(err), SendResult{}, nil
	}
	out := SendResult{ConversationID: acc.ConversationID}
	progress := func(n int, msg string) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n), Message: msg})
		}
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	seen, n := false, 0
	var r loop.RunReply
	for env, err := range g.cfg.Log.Follow(wctx, events.Conv(acc.ConversationID).Filter(), acc.Seq) {
		if err != nil {
			break
		}
		if !seen {
			seen = env.ID == acc.MessageID
			if seen && acc.Steer {
				out.Status = "steered"
				progress(0, "taken in by the running turn at its next tool boundary")
			}
			continue
		}
		e, derr := env.Decode()
		if derr != nil {
			continue
		}
		switch e := e.(type) {
		case *events.RunStarted:
			if out.RunID == "" && !acc.Steer {
				out.RunID, r = e.RunID, loop.RunReply{}
				progress(n, "run "+e.RunID+" started")
			}
		case *events.ModelCalled:
			if e.RunID == out.RunID || (acc.Steer && out.RunID == "") {
				r.Fold(e)
				if e.InTurn() && e.Error == "" && len(e.ToolCalls) > 0 {
					n++
					names := make([]string, len(e.ToolCalls))
					for i, c := range e.ToolCalls {
						names[i] = c.Name
					}
					progress(n, fmt.Sprintf("step %d: %s", e.Step, strings.Join(names, ", ")))
				}
			}
		case *events.ToolCompleted:
			r.Fold(e)
		case *events.ApprovalRequested:
			if e.RunID == out.RunID {
				out.Status = "awaiting_approval"
				return text(fmt.Sprintf("The run waits for the owner's approval of %s, on the web or Telegram (approvals are not offered over MCP). Conversation %s, run %s: follow it with crew_status.",
					e.Tool, out.ConversationID, out.RunID)), out, nil
			}
		case *events.QuestionAsked:
			if e.RunID == out.RunID {
				out.Status = "awaiting_answer"
				return text(fmt.Sprintf("The run asks the owner a question, answered on the web or Telegram (not over MCP): %q. Conversation %s, run %s: follow it with crew_status.",
					e.Question, out.ConversationID, out.RunID)), out, nil
			}
		case *events.RunFinished:
			if e.RunID == out.RunID || (acc.Steer && out.RunID == "") {
				out.RunID, out.Status = e.RunID, e.Status
				out.Reply = reply(&r, g.cfg.Home, e)
				return text(cmpOr(out.Reply, "(the run ended without a reply)")), out, nil
			}
		}
	}
	if ctx.Err() != nil {
		return nil, out, ctx.Err()
	}
	if out.Status == "" || out.Status == "steered" {
		out.Status = "running"
	}
	return text(fmt.Sprintf("Still running after %s: conversation %s, run %s. Follow it with crew_status and crew_read.", wait, out.ConversationID, cmpOr(out.RunID, "(not started yet)"))), out, nil
}

// reply is the run's last text and, for a run that did not end done, the
// notice the owner's channels show.
func reply(r *loop.RunReply, home string, e *events.RunFinished) string {
	end := r.Ending(e)
	return strings.TrimSpace(r.Text + "\n\n" + end.Notice(home))
}

// ConversationsArgs are crew_conversations' arguments.
type ConversationsArgs struct {
	Query string `json:"query,omitempty" jsonschema:"words the title, agent, channel or id contains (case-insensitive)"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many (default and most 200)"`
}

// ConversationRow is one conversation as crew_conversations lists it.
type ConversationRow struct {
	ID       string    `json:"id"`
	Agent    string    `json:"agent"`
	Channel  string    `json:"channel"`
	Title    string    `json:"title,omitempty"`
	Status   string    `json:"status"`
	Messages int       `json:"messages"`
	Updated  time.Time `json:"updated"`
}

// ConversationsResult is crew_conversations' structured result.
type ConversationsResult struct {
	Conversations []ConversationRow `json:"conversations"`
}

func (g *gateway) conversations(ctx context.Context, _ *sdk.CallToolRequest, in ConversationsArgs) (*sdk.CallToolResult, ConversationsResult, error) {
	limit := maxList
	if in.Limit > 0 {
		limit = min(in.Limit, maxList)
	}
	g.caughtUpOn(ctx, events.Root+".>")
	all, err := projections.ListConversations(g.cfg.DB, 0)
	if err != nil {
		return nil, ConversationsResult{}, err
	}
	q := strings.ToLower(strings.TrimSpace(in.Query))
	out := ConversationsResult{Conversations: []ConversationRow{}}
	var b strings.Builder
	for _, c := range all {
		if len(out.Conversations) == limit {
			break
		}
		if q != "" && !strings.Contains(strings.ToLower(c.Title+" "+c.Agent+" "+c.Channel+" "+c.ID), q) {
			continue
		}
		out.Conversations = append(out.Conversations, ConversationRow{ID: c.ID, Agent: c.Agent, Channel: c.Channel, Title: c.Title, Status: c.Status, Messages: c.Messages, Updated: c.Updated})
		fmt.Fprintf(&b, "%s · %s · %s · %s · %s\n", c.ID, c.Agent, c.Status, c.Updated.Format(time.RFC3339), c.Title)
	}
	if len(out.Conversations) == 0 {
		return text("No conversation matches."), out, nil
	}
	return text(b.String()), out, nil
}

// ReadArgs are crew_read's arguments.
type ReadArgs struct {
	Conversation string `json:"conversation" jsonschema:"the conversation's id"`
	Since        int    `json:"since,omitempty" jsonschema:"the first message index to return (next of an earlier read)"`
}

// ReadMessage is one message of a conversation as crew_read gives it.
type ReadMessage struct {
	Index     int      `json:"index"`
	Role      string   `json:"role"` // user, assistant, tool
	Text      string   `json:"text,omitempty"`
	ToolCalls []string `json:"tool_calls,omitempty"` // the tools an assistant message called
	Tool      string   `json:"tool,omitempty"`       // the tool a tool message is the result of
}

// ReadResult is crew_read's structured result.
type ReadResult struct {
	Conversation string        `json:"conversation"`
	Messages     []ReadMessage `json:"messages"`
	Next         int           `json:"next"`
}

func (g *gateway) read(ctx context.Context, _ *sdk.CallToolRequest, in ReadArgs) (*sdk.CallToolResult, ReadResult, error) {
	g.caughtUp(ctx, in.Conversation)
	if _, err := projections.GetConversation(g.cfg.DB, in.Conversation); err != nil {
		return refusal(fmt.Errorf("conversation %q: %w", in.Conversation, err)), ReadResult{}, nil
	}
	conv, err := g.cfg.Convs.Get(ctx, in.Conversation)
	if err != nil {
		return refusal(err), ReadResult{}, nil
	}
	var msgs []loop.Message
	conv.View(func(st *loop.State) { msgs = slices.Clone(st.Messages) })
	out := ReadResult{Conversation: in.Conversation, Messages: []ReadMessage{}, Next: len(msgs)}
	var b strings.Builder
	for i := max(in.Since, 0); i < len(msgs); i++ {
		m := msgs[i]
		rm := ReadMessage{Index: i, Role: m.Role, Text: cut(cmpOr(m.Said, m.Text)), Tool: m.Tool}
		for _, c := range m.ToolCalls {
			rm.ToolCalls = append(rm.ToolCalls, c.Name)
		}
		out.Messages = append(out.Messages, rm)
		switch {
		case len(rm.ToolCalls) > 0:
			fmt.Fprintf(&b, "[%d] %s called %s\n", i, m.Role, strings.Join(rm.ToolCalls, ", "))
		case m.Role == "tool":
			fmt.Fprintf(&b, "[%d] result of %s: %s\n", i, m.Tool, firstLine(rm.Text))
		default:
			fmt.Fprintf(&b, "[%d] %s: %s\n", i, m.Role, rm.Text)
		}
	}
	if len(out.Messages) == 0 {
		return text(fmt.Sprintf("No message from index %d (the conversation has %d).", in.Since, len(msgs))), out, nil
	}
	return text(b.String()), out, nil
}

// StatusArgs are crew_status' and crew_stop's arguments.
type StatusArgs struct {
	Conversation string `json:"conversation" jsonschema:"the conversation's id"`
}

// StatusResult is crew_status' structured result.
type StatusResult struct {
	Conversation string   `json:"conversation"`
	Agent        string   `json:"agent"`
	Status       string   `json:"status"`
	ActiveRuns   []string `json:"active_runs,omitempty"`
	LastRunID    string   `json:"last_run_id,omitempty"`
	Queued       int      `json:"queued,omitempty"`
	// WaitingFor names what the owner is asked, on the web or Telegram.
	WaitingFor []string `json:"waiting_for,omitempty"`
}

func (g *gateway) status(ctx context.Context, _ *sdk.CallToolRequest, in StatusArgs) (*sdk.CallToolResult, StatusResult, error) {
	g.caughtUp(ctx, in.Conversation)
	c, err := projections.GetConversation(g.cfg.DB, in.Conversation)
	if err != nil {
		return refusal(fmt.Errorf("conversation %q: %w", in.Conversation, err)), StatusResult{}, nil
	}
	out := StatusResult{Conversation: c.ID, Agent: c.Agent, Status: c.Status, ActiveRuns: c.ActiveRuns, LastRunID: c.LastRunID, Queued: c.Queued}
	for _, a := range c.PendingApprovals {
		out.WaitingFor = append(out.WaitingFor, "approval of "+a.Tool)
	}
	if q := c.PendingQuestion; q != nil {
		out.WaitingFor = append(out.WaitingFor, fmt.Sprintf("an answer to %q", q.Question))
	}
	s := fmt.Sprintf("%s (%s): %s", c.ID, c.Agent, c.Status)
	if len(c.ActiveRuns) > 0 {
		s += ", running " + strings.Join(c.ActiveRuns, ", ")
	}
	if c.Queued > 0 {
		s += fmt.Sprintf(", %d waiting", c.Queued)
	}
	if len(out.WaitingFor) > 0 {
		s += "; waits for the owner (on the web or Telegram): " + strings.Join(out.WaitingFor, "; ")
	}
	return text(s), out, nil
}

func (g *gateway) stop(ctx context.Context, _ *sdk.CallToolRequest, in StatusArgs) (*sdk.CallToolResult, loop.Stopped, error) {
	st, err := g.cfg.Stops.Stop(ctx, in.Conversation, events.StopAll, events.StopByMCP)
	if err != nil {
		return refusal(err), st, nil
	}
	return text(fmt.Sprintf("Stopped %s: run %s, %d waiting message(s) dropped.", in.Conversation, cmpOr(st.RunID, "(none running)"), st.Dropped)), st, nil
}

// caughtUp waits, at most two seconds, for the projections to apply the
// conversation's latest event: a status or a read right after crew_send
// answered sees what crew_send saw, not a batch the projections still
// hold open (for at most 50 ms).
func (g *gateway) caughtUp(ctx context.Context, conv string) {
	if events.ValidID(conv) != nil {
		return
	}
	g.caughtUpOn(ctx, events.Conv(conv).Filter())
}

// caughtUpOn waits, at most two seconds, for the projections to apply the
// log's latest event on filter (crew_conversations: all of them).
func (g *gateway) caughtUpOn(ctx context.Context, filter string) {
	projections.Reader{Log: g.cfg.Log, Fresh: g.cfg.Fresh}.CaughtUp(ctx, filter)
}

// clientName is the client's name as initialize gave it, cleaned for the
// message's from.
func clientName(ss *sdk.ServerSession) string {
	name := "mcp client"
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
			name = p.ClientInfo.Name
		}
	}
	name = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, name)
	if utf8.RuneCountInString(name) > 64 {
		name = string([]rune(name)[:64])
	}
	return name
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// refusal is a tool error the client's model can read.
func refusal(err error) *sdk.CallToolResult {
	msg := err.Error()
	switch {
	case errors.Is(err, inbound.ErrAwaitingApproval):
		msg = "Not sent: the conversation waits for the owner's approval, decided on the web or Telegram (never over MCP). " + msg
	case errors.Is(err, projections.ErrNotFound):
		msg = "Not found: " + msg
	}
	r := text(msg)
	r.IsError = true
	return r
}

func cut(s string) string {
	if utf8.RuneCountInString(s) <= maxText {
		return s
	}
	return string([]rune(s)[:maxText]) + " …(cut)"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}
