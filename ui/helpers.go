package ui

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// appName is the product name shown in titles and the brand link.
const appName = "my-agent-crew"

// pageTitle is the document title: the page's own title, then the app's.
func pageTitle(title string) string {
	if title == "" || title == appName {
		return appName
	}
	return title + " — " + appName
}

// titleOf names a conversation, falling back to its id.
func titleOf(c ConversationRow) string {
	if c.Title != "" {
		return c.Title
	}
	return c.ID
}

func convPath(id string) string    { return "/c/" + url.PathEscape(id) }
func runsPath(id string) string    { return convPath(id) + "/runs" }
func teamPath(id string) string    { return convPath(id) + "/team" }
func exportPath(id string) string  { return "/api/conversations/" + url.PathEscape(id) + "/export" }
func closePath(id string) string   { return convPath(id) + "/close" }
func decidePath(id string) string  { return "/approvals/" + url.PathEscape(id) + "/decide" }
func forkPath(runID string) string { return "/runs/" + url.PathEscape(runID) + "/fork" }
func answerPath(id string) string  { return "/questions/" + url.PathEscape(id) + "/answer" }

// runAnchor is a run's card on its conversation's runs page.
func runAnchor(l ForkLink) string {
	return runsPath(l.Conversation) + "#run-" + url.PathEscape(l.RunID)
}

// statusLabel is a status as people read it: "awaiting approval".
func statusLabel(status string) string {
	return strings.ReplaceAll(status, "_", " ")
}

// badgeClass styles a status badge; app.js builds the same class when it
// updates the header after a refresh.
func badgeClass(status string) string {
	return "badge status-" + status
}

// showBadge reports whether a conversation's status earns a badge in the
// list; idle conversations stay quiet.
func showBadge(status string) bool {
	return status != "" && status != "idle"
}

// toolStatus is the word in a tool card's summary.
func toolStatus(t ToolCard) string {
	switch {
	case t.Waiting:
		return "waiting for your approval"
	case t.Running:
		return "running…"
	case t.Outcome == "withdrawn":
		return "withdrawn — run stopped"
	case t.Outcome != "":
		return statusLabel(t.Outcome)
	case t.IsError:
		return "error"
	default:
		return "done"
	}
}

// delegateTitle heads a pinned delegate card: who answered, or is still at
// it, or stopped.
func delegateTitle(d DelegateCard) string {
	name := d.AgentName
	if name == "" {
		name = d.Agent
	}
	switch d.Status {
	case "running":
		return name + " is working on it"
	case "done":
		return name + " answered"
	default:
		return name + " stopped before answering"
	}
}

func toolClass(t ToolCard) string {
	switch {
	case t.Waiting:
		return "tool tool-waiting"
	case t.Running:
		return "tool tool-running"
	case t.Outcome == "denied" || t.Outcome == "expired":
		return "tool tool-denied"
	case t.Outcome != "" || t.IsError:
		return "tool tool-error"
	default:
		return "tool"
	}
}

// timeLeft accepts both "9m 12s" and "9m 12s left" from the handler.
func timeLeft(in string) string {
	if in == "" || in == "expired" || strings.HasSuffix(in, "left") {
		return in
	}
	return in + " left"
}

// maxModelText bounds the model text shown per call on the runs page.
const maxModelText = 280

// cut shortens s to at most n runes, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n])) + "…"
}

func itoa(n int) string { return strconv.Itoa(n) }

func canvasPath(id string) string { return "/canvases/" + url.PathEscape(id) }

// stopPath is the chat page's Stop form; queueRemovePath a waiting
// message's remove form (n from 1).
func stopPath(conv string) string { return "/c/" + url.PathEscape(conv) + "/stop" }

func teamStopPath(conv string) string { return "/c/" + url.PathEscape(conv) + "/team/stop" }

func queueRemovePath(conv string, n int) string {
	return "/c/" + url.PathEscape(conv) + "/queue/" + strconv.Itoa(n) + "/remove"
}

// anyActive: some conversation has a run open or messages waiting (the
// sidebar's Stop all shows).
func anyActive(rows []ConversationRow) bool {
	for _, r := range rows {
		switch r.Status {
		case "running", "awaiting_approval", "awaiting_answer":
			return true
		}
		if r.Queued > 0 {
			return true
		}
	}
	return false
}

// hasQueued: some item is a message waiting behind the running turn.
func hasQueued(items []Item) bool {
	for _, it := range items {
		if it.Queued {
			return true
		}
	}
	return false
}

// StatusLabel is how a status is named on the page (a live patch sets
// the badge).
func StatusLabel(status string) string { return statusLabel(status) }
