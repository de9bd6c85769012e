package events_test

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/schemas"
)

func cost(v float64) *float64 { return &v }

// samples holds, for every event type, payloads as the code emits them: one
// with every field set and one minimal. TestEveryEventTypeHasSampleAndSchema
// fails when a type is added without samples.
var samples = map[string][]events.Event{
	events.TypeJobScheduled: {
		&events.JobScheduled{Agent: "pong", Name: "morning", Cron: "0 7 * * *", Prompt: "Brief me.", Origin: events.OriginChat, SourceConversation: "web-20261130"},
		&events.JobScheduled{Agent: "pong", Name: "once", At: "2026-12-01T07:00:00Z", Prompt: "Remind me.", Origin: events.OriginChat, ApprovalTTLSeconds: 120},
	},
	events.TypeJobFired: {
		&events.JobFired{Agent: "pong", Due: time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC), Conversation: "job-morning-20261201", Origin: events.OriginProfile},
		&events.JobFired{Agent: "ledger", Due: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC), Manual: true, Origin: events.OriginProfile},
		&events.JobFired{Agent: "chef", Due: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC), Conversation: "job-eggs-202612010200-r2", Origin: events.OriginChat, Attempt: 2},
	},
	events.TypeJobRetryScheduled: {
		&events.JobRetryScheduled{Attempt: 2, RetryAt: time.Date(2026, 12, 1, 2, 0, 10, 0, time.UTC), Error: "failed: model unavailable"},
	},
	events.TypeJobCompleted: {
		&events.JobCompleted{Status: events.JobOK, NextRun: time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)},
		&events.JobCompleted{Status: events.JobSkipped},
		&events.JobCompleted{Status: events.JobFailed, Output: "exit 1", Error: "script failed"},
	},
	events.TypeJobCancelled:         {&events.JobCancelled{Reason: "owner"}},
	events.TypeTelegramOffset:       {&events.TelegramOffsetAdvanced{Offset: 1234}},
	events.TypeMCPServerRestarted:   {&events.MCPServerRestarted{Server: "files", Restarts: 1, Reason: "ended by signal: killed"}},
	events.TypeStreamReplicasRaised: {&events.StreamReplicasRaised{From: 1, To: 3, Servers: 3}},
	events.TypeSteerReceived: {
		&events.SteerReceived{Channel: "web", Text: "use metric units"},
		&events.SteerReceived{Channel: "telegram:42", Text: "/tongket travel", Command: "tongket", Prompt: "Sum up my week. travel"},
		&events.SteerReceived{Channel: "web", Text: "and grams", TurnNotes: &events.TurnNotes{Text: "x", Told: []events.NoteTold{{Key: "memory/2026-11-30.md", Len: 0, Digest: strings.Repeat("0", 64)}}}},
		&events.SteerReceived{Channel: "team", Text: "alice (message): hi", Team: &events.TeamDelivery{Through: 3, Items: []events.TeamItem{{From: "alice", Type: events.MailMessage, Content: "hi"}}}},
	},
	events.TypeSteersApplied: {&events.SteersApplied{RunID: "r1", Step: 2, SteerIDs: []string{"e1", "e2"}}, &events.SteersApplied{RunID: "r1", Step: 2, SteerIDs: []string{"e3"}, Withheld: true}},
	events.TypeModelRetried: {
		&events.ModelRetried{RunID: "r1", Step: 2, Route: "openrouter:a/b", Reason: events.RetryRateLimited, Attempt: 1, WaitMS: 2000, Error: "429 (retry after 2s)"},
		&events.ModelRetried{RunID: "r1", Step: 2, Route: "openrouter:a/b", Reason: events.RetryUnavailable, Attempt: 2, WaitMS: 1100, Error: "529 overloaded", Text: "Đang viết", Interrupted: true},
		&events.ModelRetried{RunID: "r1", Step: 2, Route: "openrouter:a/b", Reason: events.RetryLength, Attempt: 1, MaxTokens: 8192, Text: "part one", InputTokens: 900, OutputTokens: 4096, CostUSD: cost(0.002)},
	},
	events.TypeContextCompacted: {
		&events.ContextCompacted{RunID: "r1", Step: 9, Stage: events.CompactMicro, Results: []events.CompactedResult{{CallID: "c1", Chars: 8000, Text: "[compacted]", SpillPath: "spill/c/c1.txt"}}, Before: 9000, After: 6000, Limit: 7000},
		&events.ContextCompacted{RunID: "r1", Step: 9, Stage: events.CompactSummary, From: 1, To: 40, Text: "Summary: …", Route: "fake:a", Before: 9000, After: 3000, Limit: 7000},
		&events.ContextCompacted{RunID: "r1", Step: 9, Stage: events.CompactRunSummary, From: 41, To: 60, Text: "My notes: …", Route: "fake:a", CallID: "c9", Before: 9000, After: 3000, Limit: 9000},
		&events.ContextCompacted{RunID: "r1", Step: 9, Stage: events.CompactCut, Results: []events.CompactedResult{{CallID: "c2", Chars: 8000, Text: "head… [cut]"}}, From: 61, To: 62, Text: "the owner's words… [cut]", Before: 9000, After: 6000, Limit: 7000},
	},
	events.TypeRunResumed:    {&events.RunResumed{RunID: "r1", Step: 0}, &events.RunResumed{RunID: "r1", Step: 4}},
	events.TypeGuardReminded: {&events.GuardReminded{RunID: "r1", Step: 3, Tool: "shell_run", Count: 3, Text: "You have called shell_run with the same arguments 3 times in a row."}},
	events.TypeApprovalRequested: {
		&events.ApprovalRequested{ApprovalID: "a1", RunID: "r1", Step: 1, CallID: "c1", Tool: "shell_run", Arguments: json.RawMessage(`{"command":"ls"}`), ExpiresAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)},
		&events.ApprovalRequested{ApprovalID: "a2", RunID: "r1", Step: 1, CallID: "c2", Tool: "shell_run", Arguments: json.RawMessage(`{"command":"git push"}`), Reason: "matches shell_ask_patterns: git push", ExpiresAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)},
	},
	events.TypeQuestionAsked: {
		&events.QuestionAsked{QuestionID: "q1", RunID: "r1", Step: 1, CallID: "c1", Question: "Which day?", ExpiresAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)},
		&events.QuestionAsked{QuestionID: "q2", RunID: "r1", Step: 2, CallID: "c2", Question: "Which colour?", Choices: []string{"red", "blue"}, ExpiresAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)},
	},
	events.TypeQuestionAnswered: {
		&events.QuestionAnswered{QuestionID: "q1", Answer: "Tuesday", Channel: "web"},
		&events.QuestionAnswered{QuestionID: "q2", Answer: "blue"},
	},
	events.TypeTelegramCardSent: {
		&events.TelegramCardSent{CardID: "a1", Kind: events.CardApproval, ChatID: 42, MessageID: 7, Text: "Approval needed: shell_run"},
		&events.TelegramCardSent{CardID: "q1", Kind: events.CardQuestion, ChatID: -100, MessageID: 8, Text: "Which day?", Choices: []string{"Monday", "Tuesday"}},
	},
	events.TypeTelegramSendWanted: {
		&events.TelegramSendWanted{Chat: 42, Kind: events.SendReply, Ref: "conv:17#1", SourceSeq: 17, Text: "Done."},
		&events.TelegramSendWanted{Chat: 42, Kind: events.SendNotice, Ref: "update:900", Text: "queued: 1 waiting"},
		&events.TelegramSendWanted{Chat: -100, Kind: events.SendCard, Ref: "conv:18", SourceSeq: 18, Card: &events.TelegramCardWant{CardID: "q1", Kind: events.CardQuestion, Text: "Question: which day?", Choices: []string{"Monday"}}},
		&events.TelegramSendWanted{Chat: 42, Kind: events.SendEdit, Ref: "conv:19#7", SourceSeq: 19, MessageID: 7, Text: "Approval needed: shell_run\n\nApproved."},
		&events.TelegramSendWanted{Chat: 42, Kind: events.SendFile, Ref: "conv:20#f1", SourceSeq: 20, Artifact: "report"},
	},
	events.TypeTelegramSent:       {&events.TelegramSent{WantedSeq: 12, MessageID: 7}},
	events.TypeTelegramSendFailed: {&events.TelegramSendFailed{WantedSeq: 12, Chat: 42, Status: 403, Error: "Forbidden: bot was blocked by the user", ChatGone: true}},
	events.TypeTelegramOutboxPosition: {&events.TelegramOutboxPosition{Seq: 0}, &events.TelegramOutboxPosition{Seq: 99},
		&events.TelegramOutboxPosition{Seq: 120, Settled: 40, Refs: []string{"42|reply|conv:118"},
			Cards: []events.TelegramOpenCard{{CardID: "a1", Kind: events.CardApproval, Chat: 42, MessageID: 7, Text: "Approve shell_run?"}}}},
	events.TypeTelegramCardSettled: {
		&events.TelegramCardSettled{CardID: "q1", Outcome: "answered"},
	},
	events.TypeQuestionExpired: {
		&events.QuestionExpired{QuestionID: "q1"},
	},
	events.TypeApprovalDecided: {
		&events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionApproved, Always: true, Channel: "web"},
		&events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionDenied},
		&events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionExpired, Channel: "sweep"},
	},
	events.TypeRouteFallback: {
		&events.RouteFallback{RunID: "r1", Step: 1, From: "openrouter:a/b", To: "ollama:qwen3:8b", Error: "503 overloaded"},
		&events.RouteFallback{RunID: "r1", Step: 2, From: "openrouter:a/b", To: "openrouter:v/see", Reason: events.FallbackVision},
	},
	events.TypeEscalated: {
		&events.Escalated{RunID: "r1", Step: 7, Reason: "loop", Route: "openrouter:big/model"},
		&events.Escalated{RunID: "r1", Step: 2, Reason: "error", Route: "openrouter:big/model", Error: "every route failed"},
	},
	events.TypeConversationOpened: {
		&events.ConversationOpened{Agent: "master", Channel: "web", Day: "2026-11-30"},
		&events.ConversationOpened{Agent: "coach", Channel: "delegate", Title: "Plan meals", RootID: "web-20261130", RootSource: "web",
			ParentRunID: "r1", ParentConversation: "web-20261130", ParentCallID: "call_1", CostCapUSD: cost(0.25), Autonomous: true, ApprovalTTLSeconds: 600},
	},
	events.TypeConversationClosed: {
		&events.ConversationClosed{Reason: "day_end"},
		&events.ConversationClosed{Reason: "owner", Summary: "2026-11-30 09:00 asked about lunch"},
	},
	events.TypeMessageReceived: {
		&events.MessageReceived{Channel: "web", Text: "hello"},
		&events.MessageReceived{Channel: "web", Text: "look", CanvasNotes: &events.CanvasNotes{Text: "Canvas \"Plan\" (a1) changed", Told: []events.CanvasTold{{Artifact: "a1", Version: 3, Whole: true}}}},
		&events.MessageReceived{Channel: "telegram:42", From: "owner", Text: "", Attachments: []string{"inbox/p.jpg"}, ExternalID: "telegram:99"},
		&events.MessageReceived{Channel: "web", Text: "/tongket week", Command: "tongket", Prompt: "Sum up the week.", TurnNotes: &events.TurnNotes{
			Text: "Today's notes (memory/2026-11-30.md):\n- bought milk", Told: []events.NoteTold{{Key: "memory/2026-11-30.md", Len: 13, Digest: strings.Repeat("ab", 32)}}}},
	},
	events.TypeRunStarted: {
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.RunStarted{RunID: "r2", Agent: "coach", Trigger: "delegate", ParentRunID: "r1"},
	},
	events.TypeModelCalled: {
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:echo", Model: "echo", Text: "hi", CostUSD: nil},
		&events.ModelCalled{RunID: "r1", Step: 2, Route: "openrouter:x/y", Model: "x/y", InputTokens: 10, OutputTokens: 5,
			CostUSD: cost(0.0012), LatencyMS: 250, ToolCalls: []events.ToolCallRequest{{ID: "c1", Name: "workspace_read", Arguments: json.RawMessage(`{"path":"a"}`)}}},
		&events.ModelCalled{RunID: "r1", Step: 3, Route: "openrouter:x/y", Model: "x/y", CostUSD: nil, Error: "429 too many requests"},
		&events.ModelCalled{RunID: "r1", Step: 6, Route: "openrouter:anthropic/claude-sonnet-4", Model: "anthropic/claude-sonnet-4", InputTokens: 1000, OutputTokens: 5,
			CostUSD: cost(0.0012), EstimatedTokens: 1100, CachedInputTokens: 800, CacheWriteTokens: 100, CacheSavedUSD: cost(0.00208)},
		&events.ModelCalled{RunID: "r1", Step: 4, Purpose: events.PurposeEscalation, Route: "openrouter:big/model", Model: "big/model", Text: "done", CostUSD: cost(0.01)},
		&events.ModelCalled{Purpose: events.PurposeSummary, Route: "fake:echo", Model: "echo", InputTokens: 300, OutputTokens: 40},
		&events.ModelCalled{Purpose: events.PurposeConsolidate, Route: "openrouter:x/y", Model: "x/y", CostUSD: cost(0.002)},
		&events.ModelCalled{RunID: "r1", Step: 5, Purpose: events.PurposeCompaction, Route: "openrouter:x/y", Model: "x/y", CostUSD: cost(0.001)},
	},
	events.TypeBudgetReserved: {
		&events.BudgetReserved{ReservationID: "b1", Day: "2026-11-30", Agent: "coach", Conversation: "c2", Ancestors: []string{"c1"}, RunID: "r2", Step: 1,
			Purpose: events.PurposeTurn, Route: "openrouter:x/y", USD: 0.0123, ConversationCapUSD: 0.5},
		&events.BudgetReserved{ReservationID: "b2", Day: "2026-11-30", Purpose: events.PurposeScript, Route: "ollama:q", USD: 0.05, Ceiling: true},
		&events.BudgetReserved{ReservationID: "b3", Day: "2026-11-30", Agent: "coach", Conversation: "c2", RunID: "r2", Step: 2, Purpose: events.PurposeVision, Route: "openrouter:v/see", USD: 0.01},
		&events.BudgetReserved{ReservationID: "b4", Day: "2026-11-30", Agent: "coach", Conversation: "c2", RunID: "r2", Step: 3, Purpose: events.PurposeTurn, Route: "openrouter:v/see", USD: 0.01,
			Settles: []events.BudgetSettled{{ReservationID: "b3", USD: 0.004}, {ReservationID: "b1", USD: 0.01, Unknown: true}}},
	},
	events.TypeBudgetSettled: {
		&events.BudgetSettled{ReservationID: "b1", USD: 0.004},
		&events.BudgetSettled{ReservationID: "b2", USD: 0.05, Unknown: true, Interrupted: true},
	},
	events.TypeToolCalled: {
		&events.ToolCalled{RunID: "r1", Step: 2, CallID: "c1", Tool: "workspace_read", Arguments: json.RawMessage(`{"path":"a"}`)},
	},
	events.TypeNestedCall: {
		&events.NestedCall{RunID: "r1", Step: 2, CallID: "c7", N: 1, Kind: "tool", Tool: "workspace_read", Arguments: json.RawMessage(`{"path":"a"}`), Chars: 120, DurationMS: 3},
		&events.NestedCall{RunID: "r1", Step: 2, CallID: "c7", N: 2, Kind: "llm", Tool: "llm.classify", IsError: true, Chars: 3, CostUSD: cost(0.0001)},
		&events.NestedCall{RunID: "r1", Step: 2, CallID: "c7", N: 3, Kind: "tool", Tool: "artifact_edit", Chars: 9, Untrusted: true, Provenance: map[string]any{"path": "MEMORY.md", "run_id": "r1", "call_id": "c7.3"}, Canvas: &events.CanvasRef{Artifact: "a1", Version: 2, Op: events.OpEdit, Whole: true}},
		&events.NestedCall{RunID: "r1", Step: 2, CallID: "c7", N: 4, Kind: "tool", Tool: "delegate", Chars: 40, CostUSD: cost(0.01),
			Delegate: &events.DelegateResult{Agent: "coach", Conversation: "c-d-1", RunID: "r9", Status: events.RunDone, CostUSD: cost(0.01)}},
	},
	events.TypeToolCompleted: {
		&events.ToolCompleted{RunID: "r1", Step: 2, CallID: "c1", Tool: "workspace_read", Output: "text"},
		&events.ToolCompleted{RunID: "r1", Step: 2, CallID: "c6", Tool: "artifact_create", Output: "Created", Canvas: &events.CanvasRef{Artifact: "a1", Title: "Plan", Kind: events.KindMarkdown, Version: 1, Op: events.OpCreate, Whole: true}},
		&events.ToolCompleted{RunID: "r1", Step: 2, CallID: "c2", Tool: "shell_run", Output: "x", IsError: true, Truncated: true,
			SpillPath: "spill/c/c2.txt", DurationMS: 12},
		&events.ToolCompleted{RunID: "r1", Step: 2, CallID: "c5", Tool: "browser_screenshot", Output: "a screenshot of example.org",
			Parts: []events.ToolPart{{Kind: "image", MIME: "image/png", Path: "spill/c1/c5-1.png", Bytes: 2048}, {Kind: "file", Path: "shots/a.png"}, {Kind: "text", Text: "caption"}},
			Meta:  map[string]any{"url": "https://example.org", "width": 1280.0}},
		&events.ToolCompleted{RunID: "r1", Step: 2, CallID: "c3", Tool: "shell_run", Output: "DENIED_TOOL", IsError: true, Outcome: "denied"},
		&events.ToolCompleted{RunID: "r1", Step: 2, CallID: "c7", Tool: "browser_act", Output: "ref e9 is not in this conversation's last outline", IsError: true, Outcome: "blocked", RefusedBy: events.RefusedByCheck},
		&events.ToolCompleted{RunID: "r1", Step: 3, CallID: "c4", Tool: "delegate", Output: "Eat more greens.", Delegate: &events.DelegateResult{
			Agent: "health-coach", Conversation: "d-web-20261130-c4", RunID: "r9", Status: events.RunDone, CostUSD: cost(0.002), UnknownCostCalls: 1}},
	},
	events.TypeConversationSummarized: {
		&events.ConversationSummarized{Summary: "- 2026-11-29 21:04 asked for a lunch plan", LastAt: time.Date(2026, 11, 29, 21, 4, 0, 0, time.UTC), ThroughSeq: 42},
		&events.ConversationSummarized{Summary: "x", LastAt: time.Date(2026, 11, 29, 21, 4, 0, 0, time.UTC), ThroughSeq: 42, Route: "fake:echo", CostUSD: cost(0.001)},
	},
	events.TypeHookRan: {
		&events.HookRan{RunID: "r1", Hook: "Stop", Command: "notify-send done", DurationMS: 3},
		&events.HookRan{RunID: "r1", Step: 2, Hook: "PreToolUse", Command: ".agents/hooks/PreToolUse", CallID: "c1", Tool: "shell_run", ExitCode: 2, Output: "no pushes on Friday", Blocked: true, DurationMS: 12},
		&events.HookRan{RunID: "r1", Step: 2, Hook: "PostToolUse", Command: "sleep 60", CallID: "c1", Tool: "shell_run", ExitCode: -1, TimedOut: true, DurationMS: 10000},
	},
	events.TypeMemoryProposed: {
		&events.MemoryProposed{ProposalID: "p1", Agent: "pong", Old: "a\n", New: "a\nb\n", Days: []string{"2026-11-29", "2026-11-30"}, Kind: events.ProposalAddOnly, Trigger: "cli"},
		&events.MemoryProposed{ProposalID: "p2", Agent: "pong", Old: "a\n", New: "", Days: []string{}, Kind: events.ProposalRemoval, Reason: "removes 1 line", Route: "fake:echo", CostUSD: cost(0.01), Trigger: "job"},
	},
	events.TypeMemoryProposalDecided: {
		&events.MemoryProposalDecided{ProposalID: "p1", Decision: events.ProposalApproved, Channel: "web"},
		&events.MemoryProposalDecided{ProposalID: "p1", Decision: events.ProposalAutoApplied},
	},
	events.TypeMemoryRolledBack: {&events.MemoryRolledBack{ProposalID: "p1", Channel: "api"}},
	events.TypeArtifactCreated: {
		&events.ArtifactCreated{Title: "Plan", Kind: events.KindMarkdown, Content: "# Plan\n", Author: "master", Conversation: "web-20261201", RunID: "r1"},
		&events.ArtifactCreated{Title: "logo.png", Kind: events.KindImage, Content: "iVBORw0KGgo=", MIME: "image/png", Author: "pong", Note: "imported from file",
			Source: &events.ArtifactSource{Agent: "pong", Path: "img/logo.png", Digest: strings.Repeat("ab", 32)}},
		&events.ArtifactCreated{Title: "main.go", Kind: events.KindCode, Language: "go", Content: "", Author: events.AuthorOwner},
	},
	events.TypeArtifactWritten: {
		&events.ArtifactWritten{Version: 2, Op: events.OpSave, Content: "x", Author: events.AuthorOwner},
		&events.ArtifactWritten{Version: 2, Op: events.OpSave, Content: "y", Author: events.AuthorOwner, Replaces: true},
		&events.ArtifactWritten{Version: 5, Op: events.OpRestore, Content: "x", Author: events.AuthorOwner, Note: "restored from v3", RestoredFrom: 3},
		&events.ArtifactWritten{Version: 3, Op: events.OpEdit, Content: "z", Author: "master", Conversation: "web-20261201", RunID: "r1"},
		&events.ArtifactWritten{Version: 4, Op: events.OpImport, Content: "z", MIME: "image/png", Author: "pong", Note: "imported from file",
			Source: &events.ArtifactSource{Agent: "pong", Path: "a.md", Digest: strings.Repeat("cd", 32)}},
	},
	events.TypeArtifactRenamed: {&events.ArtifactRenamed{Title: "Plan B", Author: events.AuthorOwner}, &events.ArtifactRenamed{Title: "C", Author: "master", Conversation: "c1"}},
	events.TypeArtifactDeleted: {&events.ArtifactDeleted{Author: events.AuthorOwner}},
	events.TypeArtifactSeen:    {&events.ArtifactSeen{Version: 2, Conversation: "web-20261201"}},
	events.TypeCanvasFocused:   {&events.CanvasFocused{}, &events.CanvasFocused{Artifact: "a1", FromLine: 3, ToLine: 9}},
	events.TypeRunFinished: {
		&events.RunFinished{RunID: "r1", Status: events.RunDone},
		&events.RunFinished{RunID: "r1", Status: events.RunHalted, Reason: "max_steps"},
		&events.RunFinished{RunID: "r1", Status: events.RunFailed, Error: "store down"},
	},
}

func TestEveryEventTypeHasSampleAndSchema(t *testing.T) {
	registered := map[string]bool{}
	for _, e := range events.Registered() {
		path := events.SchemaPath(e.EventType(), e.EventVersion())
		registered[path] = true
		if _, err := schemas.Get(path); err != nil {
			t.Errorf("%s (%s): %v", e.EventType(), events.TypeOf(e), err)
		}
		if len(samples[e.EventType()]) == 0 {
			t.Errorf("%s: no samples in schema_test.go", e.EventType())
		}
	}
	// And no schema without a Go type.
	err := fs.WalkDir(schemas.FS(), "events", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasSuffix(path, ".json") && !registered[path] {
			t.Errorf("schema %s has no registered Go event type", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Events as the code emits them, stored and read back, validate against
// their schemas.
func TestEmittedEventsValidateAgainstSchemas(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	for typ, list := range samples {
		for i, e := range list {
			stored, err := log.Append(ctx, events.Conv("schemas"), events.Any, events.MustNew(e))
			if err != nil {
				t.Fatal(err)
			}
			read, err := log.ReadAll(ctx, stored[0].Subject, stored[0].Seq)
			if err != nil || len(read) != 1 {
				t.Fatalf("%s: read back: %v, %v", typ, read, err)
			}
			body, _ := json.Marshal(read[0])
			if err := schemas.ValidateJSON(events.SchemaPath(typ, e.EventVersion()), body); err != nil {
				t.Errorf("%s sample %d does not validate: %v\n%s", typ, i, err, body)
			}
		}
	}
}

// A schema rejects what the code never emits: a wrong type or missing data.
func TestSchemasRejectMalformedEvents(t *testing.T) {
	bad := []string{
		`{"type":"run_started","v":1,"id":"x","time":"2026-11-30T00:00:00Z","data":{"run_id":"r"}}`,
		`{"type":"run_started","v":2,"id":"x","time":"2026-11-30T00:00:00Z","data":{"run_id":"r","agent":"a","trigger":"message"}}`,
		`{"type":"run_started","v":1,"id":"x","time":"2026-11-30T00:00:00Z","data":{"run_id":"r","agent":"a","trigger":"whim"}}`,
		`{"type":"run_started","v":1,"id":"x","time":"2026-11-30T00:00:00Z","data":{"run_id":"r","agent":"a","trigger":"message","extra":1}}`,
	}
	for _, b := range bad {
		if err := schemas.ValidateJSON(events.SchemaPath("run_started", 1), []byte(b)); err == nil {
			t.Errorf("schema accepted %s", b)
		}
	}
	// A turn's model call names its run and step; only the harness's own
	// calls may go without; a purpose is one of the agreed words.
	badCalls := []string{
		`{"type":"model_called","v":1,"id":"x","time":"2026-11-30T00:00:00Z","data":{"route":"r","model":"m","input_tokens":0,"output_tokens":0,"cost_usd":null,"latency_ms":0}}`,
		`{"type":"model_called","v":1,"id":"x","time":"2026-11-30T00:00:00Z","data":{"purpose":"turn","route":"r","model":"m","input_tokens":0,"output_tokens":0,"cost_usd":null,"latency_ms":0}}`,
		`{"type":"model_called","v":1,"id":"x","time":"2026-11-30T00:00:00Z","data":{"purpose":"escalation","run_id":"r1","route":"r","model":"m","input_tokens":0,"output_tokens":0,"cost_usd":null,"latency_ms":0}}`,
		`{"type":"model_called","v":1,"id":"x","time":"2026-11-30T00:00:00Z","data":{"purpose":"whim","route":"r","model":"m","input_tokens":0,"output_tokens":0,"cost_usd":null,"latency_ms":0}}`,
	}
	for _, b := range badCalls {
		if err := schemas.ValidateJSON(events.SchemaPath("model_called", 1), []byte(b)); err == nil {
			t.Errorf("schema accepted %s", b)
		}
	}
}
