package view

import (
	"cmp"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/my-agent-crew/crew/events"
)

// ReasonInterrupted is the reason of a run the worker closed after it
// was cut by crashes too often (loop.ReasonInterrupted).
const ReasonInterrupted = "interrupted"

// NoRoutes is the error of a turn whose agent has no model routes, which
// Notice turns into what to set.
const NoRoutes = "the agent has no model routes: set routes in its agent.yaml (or MY_AGENT_ROUTES)"

// Ending is how a run ended, gathered from its events: what the web chat
// and the Telegram gateway tell the owner when a run stops without a
// normal answer (one place for the words, R-WEB, R-TG).
type Ending struct {
	Status string // events.RunDone, RunHalted, RunFailed
	Reason string // max_steps, loop, cost_cap, hook, steer_hook, model_error, ask_user, poisoned, interrupted, …
	Error  string
	// CostUSD sums the run's known model costs; UnknownCostCalls counts
	// the successful calls whose cost was not reported.
	CostUSD          float64
	UnknownCostCalls int
	// Replied says a model call of the run wrote text for the owner.
	Replied bool
	// Question is what ask_user asked, when the run ended on it.
	Question string
	// By is who stopped a stopped run (web, api, telegram, cli).
	By string
}

// Run end kinds, for styling: how the owner should read the notice.
const (
	EndFailed  = "failed"   // it broke: something to fix
	EndHalted  = "halted"   // a limit or a hook stopped it
	EndNoReply = "no_reply" // it finished without text
	EndAsks    = "asks"     // it asks the owner a question
	EndStopped = "stopped"  // the owner stopped it
	// EndInterrupted: cut by crashes MaxResumes+1 times and closed (the
	// run's reason, which the chat and Telegram say in these words).
	EndInterrupted = "interrupted"
)

// Kind is one of the End kinds, or "" for a run that answered normally.
func (e Ending) Kind() string {
	switch {
	case e.Status == events.RunFailed && e.Reason == ReasonInterrupted:
		return EndInterrupted
	case e.Status == events.RunFailed:
		return EndFailed
	case e.Status == events.RunHalted:
		return EndHalted
	case e.Status == events.RunStopped:
		return EndStopped
	case e.Reason == "ask_user":
		return EndAsks
	case e.Status == events.RunDone && !e.Replied:
		return EndNoReply
	case e.Status != events.RunDone:
		return EndFailed // a status this build does not know: say so
	}
	return ""
}

// Notice is one plain sentence saying what happened and what to do; ""
// when the run answered normally. home is the crew home, whose env file it
// names for a missing or refused key ("" names it generically).
func (e Ending) Notice(home string) string {
	envFile := "the home's env file"
	if home != "" {
		envFile = filepath.Join(home, "env")
	}
	detail := firstLine(e.Error)
	switch e.Reason {
	case "model_error":
		return modelNotice(detail, envFile)
	case "max_steps":
		return "Stopped: the run used all its steps (max_steps) before finishing — send a message to let it carry on, or raise max_steps in the agent's agent.yaml."
	case "loop":
		return "Stopped: the agent kept repeating the same tool call (loop guard) — send a message to carry on, saying what to do differently."
	case "cost_cap":
		return "Stopped: the run reached its cost cap (cost_cap_usd) — send a message to let it carry on, or raise cost_cap_usd in the agent's agent.yaml."
	case "budget":
		// The sentence names the budget: "health-coach's daily cap of
		// $0.50 is reached (…)."
		return "Stopped before the next model call: " + cmp.Or(detail, "a budget is reached.") + " Nothing was sent; raise the cap in config.yaml or the agent's agent.yaml, or wait for tomorrow's budget, then send a message to carry on."
	case "hook":
		return "Stopped by a hook" + colon(detail) + " — change the message or the hook, then send it again."
	case "steer_hook":
		return "Stopped: a hook refused your /steer" + colon(detail) + " — send a message to carry on without it."
	case "shutdown":
		return "Stopped at a step boundary: " + cmp.Or(detail, "the lead asked this teammate to shut down") + "."
	case "ask_user":
		if e.Question != "" {
			return "The agent asks: " + firstLine(e.Question) + " — reply to answer."
		}
		return "The agent asked you a question — reply to answer."
	case "poisoned":
		return "Stopped after failing again and again" + colon(detail) + " — fix the cause, then send a message to try again; it is not retried until then."
	case events.StoppedByOwner:
		by := ""
		if e.By != "" {
			by = " (" + e.By + ")"
		}
		return "Stopped by you" + by + ": nothing more runs in that turn, and what it was doing was cut off — send a message to carry on."
	case "interrupted":
		return "Interrupted: the server stopped in the middle of this run twice, so it was closed and is not resumed again — check what its last tool calls did, then send a message to try again."
	}
	switch e.Kind() {
	case "":
		return ""
	case EndNoReply:
		return "The agent finished without writing a reply — send a message to ask again."
	case EndAsks:
		return "The agent asked you a question — reply to answer."
	}
	what := "The run " + cmp.Or(e.Status, "ended")
	if e.Reason != "" {
		what += " (" + e.Reason + ")"
	}
	return what + colon(detail) + " — send a message to try again."
}

// Spend is the run's model cost: "$0.0123", "$0.0123 + 2 calls of
// unknown cost", or "cost unknown" when no call's cost was reported.
func (e Ending) Spend() string {
	switch {
	case e.UnknownCostCalls > 0 && e.CostUSD == 0:
		return "cost unknown"
	case e.UnknownCostCalls == 1:
		return fmt.Sprintf("$%.4f + 1 call of unknown cost", e.CostUSD)
	case e.UnknownCostCalls > 1:
		return fmt.Sprintf("$%.4f + %d calls of unknown cost", e.CostUSD, e.UnknownCostCalls)
	}
	return fmt.Sprintf("$%.4f", e.CostUSD)
}

// firstLine is s up to its first line break, trimmed.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func colon(detail string) string {
	if detail == "" {
		return ""
	}
	return ": " + detail
}

// llmError finds the provider, the class and the HTTP status in a model
// error's text ("openrouter: permanent model error: HTTP 401: …", maybe
// behind "gave up after 3 attempts: "): a run_finished keeps only the text.
var llmError = regexp.MustCompile(`\b(openrouter|ollama|fake): (rate limited|provider unavailable|context too long|permanent model error)(?:: HTTP (\d{3}))?(?:: (.*))?`)

// modelNotice says why every model route failed, by the provider's status
// class, and what the owner can do about it.
func modelNotice(detail, envFile string) string {
	const lead = "Every model route failed: "
	if strings.Contains(detail, NoRoutes) {
		return "The agent has no model routes — set routes in its agent.yaml (or MY_AGENT_ROUTES in " + envFile + ")."
	}
	m := llmError.FindStringSubmatch(detail)
	if m == nil {
		return lead + cmp.Or(detail, "no reason given") + " — check the agent's routes and the keys in " + envFile + ", then send a message to try again."
	}
	provider, class, body := m[1], m[2], m[4]
	status, _ := strconv.Atoi(m[3])
	key := "the " + provider + " key"
	if provider == "openrouter" {
		key = "OPENROUTER_API_KEY"
	}
	from := provider
	if status != 0 {
		from = fmt.Sprintf("%d from %s", status, provider)
	}
	switch {
	case status == 401 || status == 403:
		return lead + from + " — check " + key + " in " + envFile + "."
	case status == 402:
		return lead + from + " (out of credit) — add credit to the " + provider + " account, or use another route."
	case status == 404:
		return lead + from + " (no such model) — check the model names in the agent's routes."
	case class == "context too long":
		return lead + "the conversation is too long for the model — start a new conversation (it is told a summary of this one)."
	case status == 429 || class == "rate limited":
		return lead + from + " (rate limited) — wait a minute, then send a message to try again."
	case status >= 500:
		return lead + from + " (the provider is down or overloaded) — try again later, or add a fallback route."
	case status == 0 && strings.Contains(strings.ToLower(body), "api key"):
		return lead + provider + " has no API key — set " + key + " in " + envFile + "."
	case status == 0 && provider == "ollama":
		return lead + "Ollama did not answer — start it (ollama serve) or check OLLAMA_HOST in " + envFile + "."
	case status == 0:
		return lead + provider + " " + class + colon(body) + " — try again later, or add a fallback route."
	}
	return lead + from + colon(body) + " — check the agent's routes and " + key + " in " + envFile + "."
}
