package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/telegram"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/summarize"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/projectionstest"
	"github.com/my-agent-crew/crew/tools"
	"github.com/nats-io/nuid"
	"go.etcd.io/bbolt"
)

// scriptModel answers by the last user message, statelessly:
//   - "gatecmd": the gated tool with a two-line command holding ">";
//   - "ask": ask_user "Which day?" with the choices Monday and Tuesday,
//     then "got: <the call's result>";
//   - "fail401": OpenRouter's 401;
//   - "spend": a progress note costing $0.0021, every step, until max_steps;
//   - "silent": no text, cost unknown;
//   - "slow": "slow done" after 700 ms;
//   - "gate …": first a call of the gated tool, then "done after tool";
//   - "long": a 5,000-character answer of numbered lines;
//   - anything else: "echo: <text>".
type scriptModel struct{}

var _ llm.Model = scriptModel{}

func (scriptModel) Call(ctx context.Context, req llm.Request) (llm.Reply, error) {
	msgs := req.Messages
	last, afterTool := "", false
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			last = msgs[i].Text()
			break
		}
		if msgs[i].Role == llm.RoleAssistant {
			afterTool = true
		}
	}
	ch := &llm.Reply{Usage: llm.Usage{Input: 10, Output: 5}, CostUSD: new(0.0)}
	switch {
	case last == "gatecmd" && !afterTool:
		ch.ToolCalls = []llm.ToolCall{{ID: nuid.Next(), Name: "gated",
			Arguments: `{"command":"echo hi > out.txt\ncat out.txt","timeout_seconds":30}`}}
	case last == "ask" && !afterTool:
		ch.ToolCalls = []llm.ToolCall{{ID: nuid.Next(), Name: "ask_user", Arguments: `{"question":"Which day?","choices":["Monday","Tuesday"]}`}}
	case last == "ask":
		ch.Text = "got: " + lastToolResult(msgs)
	case last == "fail401":
		return llm.Reply{}, &llm.Error{Kind: llm.ErrPermanent, Provider: llm.ProviderOpenRouter, Status: 401, Body: "No auth credentials found"}
	case last == "spend":
		ch.CostUSD = new(0.0021)
		ch.ToolCalls = []llm.ToolCall{{ID: nuid.Next(), Name: "progress_note", Arguments: `{"text":"still going"}`}}
	case last == "silent":
		ch.CostUSD = nil
	case last == "slow":
		select {
		case <-time.After(700 * time.Millisecond):
		case <-ctx.Done():
			return llm.Reply{}, ctx.Err()
		}
		ch.Text = "slow done"
	case strings.HasPrefix(last, "gate") && !afterTool:
		ch.ToolCalls = []llm.ToolCall{{ID: nuid.Next(), Name: "gated", Arguments: `{"path":"notes.txt"}`}}
	case strings.HasPrefix(last, "gate"):
		ch.Text = "done after tool"
	case last == "long":
		ch.Text = longText()
	case strings.HasPrefix(last, "files "):
		ch.Text = "Here they are.\n"
		for _, id := range strings.Fields(strings.TrimPrefix(last, "files ")) {
			ch.Text += "FILE: artifact:" + id + "\n"
		}
	default:
		ch.Text = "echo: " + last
	}
	return *ch, nil
}

// lastToolResult is the content of the last tool response in msgs.
func lastToolResult(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleTool {
			return msgs[i].Text()
		}
	}
	return ""
}

func longText() string {
	var b strings.Builder
	for i := 0; b.Len() < 5000; i++ {
		fmt.Fprintf(&b, "line %03d *unbalanced _markdown [\n", i)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// gated is a tool that always asks for approval.
type gated struct{}

func (gated) Def() tools.Def {
	return tools.Def{Name: "gated", Description: "writes a note", Params: json.RawMessage(`{"type":"object"}`)}
}
func (gated) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Result{Output: "written"}, nil
}
func (gated) NeedsApproval() bool { return true }

// crew is a real log, projections, worker and the gateways' doors
// (inbound.NewDoors) with the scripted model.
type crew struct {
	log       *events.Log
	db        *bbolt.DB // the projections database, kept by runner
	runner    *projections.Runner
	in        *inbound.Inbound
	approver  *inbound.Approvals
	answerer  *inbound.Questions
	stops     *inbound.Stops
	summaries *summarize.Summarizer
	worker    *loop.Worker
	workspace string
	logs      *syncBuffer
	logger    *slog.Logger
}

// The doors the App hands the gateway are its parts.
var (
	_ telegram.Receiver = (*inbound.Inbound)(nil)
	_ telegram.Approver = (*inbound.Approvals)(nil)
	_ telegram.Answerer = (*inbound.Questions)(nil)
	_ telegram.Stopper  = (*inbound.Stops)(nil)
)

func newCrew(t *testing.T) *crew {
	t.Helper()
	log, db, runner := projectionstest.Start(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("You are a test."), 0o600)
	reg, err := tools.New(gated{})
	if err != nil {
		t.Fatal(err)
	}
	agent := loop.Agent{ID: "master", Dir: dir, Workspace: dir, Routes: []string{"fake:script"}, Tools: []string{"gated"},
		MaxSteps: 5, ToolOutputChars: 8000, ApprovalTTL: time.Hour}
	deps := loop.Deps{
		Models: llm.ModelsFunc(func(string) (llm.Model, error) { return scriptModel{}, nil }),
		Tools:  reg, Clock: loop.WallClock{}, HomeDir: t.TempDir(),
		Crew: loop.Agents{"master": agent},
	}
	convs := loop.NewConvs(log, nil)
	w, err := loop.StartWorker(t.Context(), loop.WorkerConfig{Log: log, Convs: convs, Deps: deps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	d := inbound.NewDoors(&inbound.Inbound{Convs: convs, Kick: w, Master: "master", Crew: deps.Crew, Clock: loop.WallClock{Zone: time.UTC}},
		inbound.ByID{Log: log, DB: db, Fresh: runner, Worker: w})
	buf := &syncBuffer{}
	return &crew{
		log: log, db: db, runner: runner, in: d.Inbound, approver: d.Approvals, answerer: d.Questions, stops: d.Stops,
		summaries: &summarize.Summarizer{Log: log, Convs: convs, Crew: deps.Crew, Models: deps.Models, Fresh: runner, Clock: loop.WallClock{Zone: time.UTC}},
		worker:    w,
		workspace: dir,
		logs:      buf,
		logger:    slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// question is the latest question asked in conv (nil: none yet).
func (c *crew) question(t *testing.T, conv string) *events.QuestionAsked {
	t.Helper()
	envs, err := c.log.ReadAll(t.Context(), events.Conv(conv).Subject(events.TypeQuestionAsked), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) == 0 {
		return nil
	}
	e, err := envs[len(envs)-1].Decode()
	if err != nil {
		t.Fatal(err)
	}
	return e.(*events.QuestionAsked)
}

// received lists the stored messages of all conversations.
func (c *crew) received(t *testing.T) []events.MessageReceived {
	t.Helper()
	envs, err := c.log.ReadAll(t.Context(), events.Root+".conv.*."+events.TypeMessageReceived, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.MessageReceived
	for _, env := range envs {
		e, err := env.Decode()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *e.(*events.MessageReceived))
	}
	return out
}

// offset is the bot's last stored offset (0: none).
func (c *crew) offset(t *testing.T, bot string) int64 {
	t.Helper()
	envs, err := c.log.ReadAll(t.Context(), events.Telegram(bot).Subject(events.TypeTelegramOffset), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) == 0 {
		return 0
	}
	e, err := envs[len(envs)-1].Decode()
	if err != nil {
		t.Fatal(err)
	}
	return e.(*events.TelegramOffsetAdvanced).Offset
}

// cardCopies are the cards' copies the outbox sent: each card wanted and
// its telegram_sent, as a TelegramCardSent.
func (c *crew) cardCopies(t *testing.T) []events.TelegramCardSent {
	t.Helper()
	wanted := map[uint64]*events.TelegramSendWanted{}
	envs, err := c.log.ReadAll(t.Context(), events.Root+".tg.*."+events.TypeTelegramSendWanted, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range envs {
		d, _ := env.Decode()
		if w := d.(*events.TelegramSendWanted); w.Card != nil {
			wanted[env.Seq] = w
		}
	}
	sent, err := c.log.ReadAll(t.Context(), events.Root+".tg.*."+events.TypeTelegramSent, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.TelegramCardSent
	for _, env := range sent {
		d, _ := env.Decode()
		s := d.(*events.TelegramSent)
		if w := wanted[s.WantedSeq]; w != nil {
			out = append(out, events.TelegramCardSent{CardID: w.Card.CardID, Kind: w.Card.Kind, ChatID: w.Chat, MessageID: s.MessageID, Text: w.Card.Text, Choices: w.Card.Choices})
		}
	}
	return out
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
