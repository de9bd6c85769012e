package loop

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed ask_user.md
var askUserDescription string

// AskUserTool asks the owner a question: the turn pauses until they answer
// (on the web, on Telegram, through the API) or the question expires, and
// the answer is the call's result.
const AskUserTool = view.AskUserTool

// Limits of one question, so it fits a Telegram message and its buttons.
const (
	MaxQuestionRunes = 2000
	MaxChoices       = 8
	MaxChoiceRunes   = 64
	// MaxAnswerBytes bounds an answer (400 beyond).
	MaxAnswerBytes = 8 << 10
)

// askChildText answers ask_user in a delegated conversation: the owner
// talks to the agent that delegated, which is told the question.
const askChildText = "Your question goes back to the agent that delegated this task to you, with what you wrote; end your reply here."

// askExpiredText is the result of a question nobody answered in time.
func askExpiredText(expired time.Time) string {
	return fmt.Sprintf("No answer: nobody answered this question before it expired at %s. This is not a refusal. Decide what to do next: carry on with a sensible default and say which one you chose, or stop and say what you need to know.", expired.UTC().Format(time.RFC3339))
}

type askUser struct{}

type askArgs struct {
	Question string   `json:"question"`
	Choices  []string `json:"choices"`
}

func (askUser) Def() tools.Def {
	return tools.Def{Name: AskUserTool, Description: strings.TrimSpace(askUserDescription), Default: true,
		Params: json.RawMessage(`{"type":"object","properties":{` +
			`"question":{"type":"string","description":"The question, in one or a few sentences."},` +
			`"choices":{"type":"array","items":{"type":"string"},"maxItems":8,"description":"Optional suggested answers, shown as buttons; the owner may still answer in their own words."}},` +
			`"required":["question"]}`)}
}

// Run is what a delegated conversation's call gets (the turn answers a
// root conversation's call by pausing on the question).
func (askUser) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Result{Output: askChildText}, nil
}

func (askUser) traits() traits { return traits{instant: true, asks: true, anyAgent: true} }

// vet refuses a question that could not be shown: no text, too long, too
// many or empty choices.
func (askUser) vet(_ *Turn, c events.ToolCallRequest) (string, string, bool) {
	if _, err := parseAsk(c.Arguments); err != nil {
		return "Not asked: " + err.Error() + " Nothing was shown to the owner.", "blocked", true
	}
	return "", "", false
}

func parseAsk(raw json.RawMessage) (askArgs, error) {
	var a askArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("the arguments are not {\"question\": string, \"choices\": [string]}: %v.", err)
	}
	a.Question = strings.TrimSpace(a.Question)
	switch n := utf8.RuneCountInString(a.Question); {
	case n == 0:
		return a, fmt.Errorf("question is empty.")
	case n > MaxQuestionRunes:
		return a, fmt.Errorf("question has %d characters; at most %d.", n, MaxQuestionRunes)
	}
	if len(a.Choices) > MaxChoices {
		return a, fmt.Errorf("%d choices; at most %d.", len(a.Choices), MaxChoices)
	}
	seen := map[string]bool{}
	for i, ch := range a.Choices {
		ch = strings.TrimSpace(ch)
		switch n := utf8.RuneCountInString(ch); {
		case n == 0:
			return a, fmt.Errorf("choice %d is empty.", i+1)
		case n > MaxChoiceRunes:
			return a, fmt.Errorf("choice %d has %d characters; at most %d.", i+1, n, MaxChoiceRunes)
		case seen[ch]:
			return a, fmt.Errorf("choice %d repeats %q.", i+1, ch)
		}
		seen[ch] = true
		a.Choices[i] = ch
	}
	return a, nil
}

func (a askUser) answer(ctx context.Context, _ *Turn, c *toolCall) (tools.Result, error) {
	return a.Run(ctx, tools.Env{}, c.Arguments)
}

// ask records the question and pauses the turn on it (R-GATE: ask_user
// always asks). Its time is the conversation's approval TTL.
func (t *Turn) ask(ctx context.Context, s snapshotOf, c events.ToolCallRequest) error {
	a, err := parseAsk(c.Arguments)
	if err != nil { // vetted already: only a changed log gets here
		return t.result(ctx, s.openRun, s.step, c, "Not asked: "+err.Error(), true, "blocked")
	}
	return t.emit(ctx, &events.QuestionAsked{
		QuestionID: t.deps.Clock.NewID(), RunID: s.openRun, Step: s.step, CallID: c.ID, Question: a.Question,
		Choices: a.Choices, ExpiresAt: t.deps.Clock.Now().Add(t.ttl(s)).UTC(),
	})
}

// ttl is how long an approval or a question waits: the conversation's
// approval_ttl_seconds, else the agent's (config.yaml's), else 600 s.
func (t *Turn) ttl(s snapshotOf) time.Duration {
	ttl := t.agent.ApprovalTTL
	if s.ttl > 0 {
		ttl = time.Duration(s.ttl) * time.Second
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return ttl
}

// DefaultTTL is config.yaml's approval_ttl_seconds default (seed 000 §5).
const DefaultTTL = 600 * time.Second

// answered gives a settled question's call its result: the owner's answer
// as they wrote it (frame-like text neutralised, as in the owner's
// messages: only the harness opens a frame, R-SEC-1), or word that nobody
// answered in time.
func (t *Turn) answered(ctx context.Context, s snapshotOf, c events.ToolCallRequest, q Question) error {
	if q.Outcome == QuestionAnswered {
		return t.result(ctx, s.openRun, s.step, c, Unframe(q.Answer), false, "")
	}
	return t.result(ctx, s.openRun, s.step, c, askExpiredText(q.ExpiresAt), false, "expired")
}
