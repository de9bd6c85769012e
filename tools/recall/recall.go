// Package recall holds the recall and recall_open tools: the crew finds
// what was said, decided and written — past conversations, memory,
// canvases — in the search projection (projections/search), which the
// server hands in as an Index. What an agent can recall follows its seat
// (the Index applies the reach rules); every hit comes back fenced, since
// a past message or page may hold words from outside (R-SEC-1), with the
// source it came from.
package recall

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

// Scopes a recall may be narrowed to.
var Scopes = []string{"conversations", "memory", "canvas", "all"}

// Query is one recall (its Scope one of Scopes); the shape is the
// search projection's too, so it lives below both.
type Query = view.RecallQuery

// Hit is one thing found.
type Hit = view.RecallHit

// Index is the search projection as the tools see it
// (projections/search.Recall); it applies the reach rules of the seat of
// agent in conversation conv.
type Index interface {
	Recall(ctx context.Context, agent, conv string, q Query) ([]Hit, error)
	// Open returns the text around the hit ref names, or ok false when
	// there is none the seat can reach.
	Open(ctx context.Context, agent, conv, ref string) (text string, ok bool, err error)
}

// Tools returns recall and recall_open over idx (nil: they say recall is
// not available in this process); a since date is a day of s's timezone.
func Tools(idx Index, s tools.Services) []tools.Tool {
	return []tools.Tool{tools.NewFunc[recallArgs](Recall{idx, s.Loc()}), tools.NewFunc[openArgs](Open{idx})}
}

//go:embed recall.md
var recallDescription string

//go:embed recall_open.md
var openDescription string

// Recall is the recall tool.
type Recall struct {
	idx Index
	loc *time.Location // the owner's
}

// ReadOnly: it changes nothing.
func (Recall) ReadOnly() bool { return true }

func (Recall) Def() tools.Def {
	return tools.Def{Name: "recall", Description: recallDescription + "\n\n" + fence.Rule, Default: true}
}

// maxHits is how many hits a recall returns.
const maxHits = 8

type recallArgs struct {
	Query string `json:"query" jsonschema:"A few words of what you are looking for."`
	Scope string `json:"scope,omitempty" jsonschema:"Where to look; default all." schema:"enum=conversations|memory|canvas|all"`
	Since string `json:"since,omitempty" jsonschema:"Only what is newer: a date YYYY-MM-DD (the owner's timezone) or an RFC 3339 time."`
	Agent string `json:"agent,omitempty" jsonschema:"Only what this agent said or wrote."`
}

func (r Recall) Run(ctx context.Context, env tools.Env, a recallArgs) (tools.Result, error) {
	if strings.TrimSpace(a.Query) == "" {
		return tools.Failf("query is required: a few words of what you are looking for"), nil
	}
	if a.Scope != "" && !contains(Scopes, a.Scope) {
		return tools.Failf("scope %q: use one of %s", a.Scope, strings.Join(Scopes, ", ")), nil
	}
	q := Query{Text: a.Query, Scope: a.Scope, Agent: a.Agent, Limit: maxHits}
	if a.Since != "" {
		t, err := ParseSince(a.Since, r.loc)
		if err != nil {
			return tools.Failf("since %q: %v", a.Since, err), nil
		}
		q.Since = t
	}
	if r.idx == nil {
		return tools.Failf("recall is not available in this process"), nil
	}
	hits, err := r.idx.Recall(ctx, env.AgentID, env.Conversation, q)
	if err != nil {
		return tools.Result{}, fmt.Errorf("recall: %w", err)
	}
	if len(hits) == 0 {
		return tools.Result{Output: fmt.Sprintf("Nothing you can reach matches %q. Try other words, or a wider scope.", a.Query)}, nil
	}
	return tools.Result{Output: Format(hits, true)}, nil
}

// Format writes hits as the tools show them: each source on a harness
// line, its snippet fenced; withRef adds what recall_open takes.
func Format(hits []Hit, withRef bool) string {
	var b strings.Builder
	for i, h := range hits {
		fmt.Fprintf(&b, "%d. %s (%s)", i+1, oneLine(h.Source), h.Kind)
		if withRef {
			fmt.Fprintf(&b, " — recall_open %q", h.Ref)
		}
		b.WriteString("\n")
		b.WriteString(fence.Wrap(h.Kind, h.Snippet))
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// ParseSince reads a date (in loc) or an RFC 3339 time.
func ParseSince(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want YYYY-MM-DD or an RFC 3339 time")
	}
	return t, nil
}

// Open is the recall_open tool.
type Open struct{ idx Index }

// ReadOnly: it changes nothing.
func (Open) ReadOnly() bool { return true }

func (Open) Def() tools.Def {
	return tools.Def{Name: "recall_open", Description: openDescription + "\n\n" + fence.Rule, Default: true}
}

type openArgs struct {
	Source string `json:"source" jsonschema:"A hit's source as recall gave it (subject@sequence)."`
}

func (o Open) Run(ctx context.Context, env tools.Env, a openArgs) (tools.Result, error) {
	if o.idx == nil {
		return tools.Failf("recall is not available in this process"), nil
	}
	text, ok, err := o.idx.Open(ctx, env.AgentID, env.Conversation, strings.TrimSpace(a.Source))
	if err != nil {
		return tools.Result{}, fmt.Errorf("recall_open: %w", err)
	}
	if !ok {
		return tools.Failf("No hit %q that you can reach. Pass a source exactly as recall gave it.", a.Source), nil
	}
	return tools.Result{Output: fence.Wrap("recall "+oneLine(a.Source), text)}, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
