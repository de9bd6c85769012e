package projections

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// Buckets of the usage ledger (R-LOOP-5): one row per model call, keyed by
// its time and stream sequence, and the agent each conversation or job
// scope belongs to. Rows keep the instant, not a day: the owner's day is
// cut at query time, so a rebuild is byte-identical whatever the zone.
const (
	bucketUsageCalls  = "usage_calls"
	bucketUsageScopes = "usage_scopes"
)

// UsageCall is one model call in the ledger. CostUSD nil is an unknown
// cost, counted apart and never as zero.
type UsageCall struct {
	Agent        string    `json:"agent,omitempty"`
	Conversation string    `json:"conversation,omitempty"`
	Route        string    `json:"route"`
	Purpose      string    `json:"purpose"`
	InputTokens  int       `json:"input_tokens"`
	OutputTokens int       `json:"output_tokens"`
	CostUSD      *float64  `json:"cost_usd"`
	Failed       bool      `json:"failed,omitempty"`
	At           time.Time `json:"at"`
	// CachedInputTokens of InputTokens came from the prompt cache;
	// CacheSavedUSD is what that saved at the catalog's price.
	CachedInputTokens int     `json:"cached_input_tokens,omitempty"`
	CacheSavedUSD     float64 `json:"cache_saved_usd,omitempty"`
}

// Unknown reports whether the call's cost is unknown: it answered, and no
// price was reported or known. A failed call cost nothing we know of.
func (c UsageCall) Unknown() bool { return c.CostUSD == nil && !c.Failed }

// Usage projects every model_called into the ledger.
type Usage struct{}

var _ Projection = Usage{}

func (Usage) Name() string { return "usage" }

// Wants: openings (which agent a scope is), jobs scheduled and model calls,
// of any scope.
func (Usage) Wants(_, typ string) bool {
	return typ == events.TypeConversationOpened || typ == events.TypeJobScheduled || typ == events.TypeModelCalled
}

func (Usage) Buckets() []string { return []string{bucketUsageCalls, bucketUsageScopes} }

func (Usage) Apply(tx *Tx, env events.Envelope) error {
	switch env.Type {
	case events.TypeConversationOpened, events.TypeJobScheduled, events.TypeModelCalled:
	default:
		return nil
	}
	scope := events.ScopeOf(env.Subject)
	e, err := env.Decode()
	if err != nil {
		return err
	}
	scopes := tx.Bucket([]byte(bucketUsageScopes))
	switch e := e.(type) {
	case *events.ConversationOpened:
		return scopes.Put([]byte(scope), []byte(e.Agent))
	case *events.JobScheduled:
		return scopes.Put([]byte(scope), []byte(e.Agent))
	case *events.ModelCalled:
		c := UsageCall{Route: e.Route, Purpose: e.PurposeOf(), InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
			CostUSD: e.CostUSD, Failed: e.Error != "", At: env.Time.UTC(), CachedInputTokens: e.CachedInputTokens}
		if e.CacheSavedUSD != nil {
			c.CacheSavedUSD = *e.CacheSavedUSD
		}
		switch scope.Kind() {
		case "conv":
			c.Conversation = scope.ID()
			c.Agent = string(scopes.Get([]byte(scope)))
		case "agent":
			c.Agent = scope.ID()
		default:
			c.Agent = string(scopes.Get([]byte(scope)))
		}
		key := append(timeKey(env.Time), u64(env.Seq)...)
		return tx.putJSON(tx.Bucket([]byte(bucketUsageCalls)), key, c)
	}
	return nil
}

// Usage groupings (GET /api/usage?group_by=…).
const (
	ByAgent        = "agent"
	ByConversation = "conversation"
	ByRoute        = "route"
	ByDay          = "day"
	ByPurpose      = "purpose"
)

// UsageGroupings are the group_by values, in the order the API names them.
var UsageGroupings = []string{ByAgent, ByConversation, ByRoute, ByDay, ByPurpose}

// UsageGroup is the sum of the calls sharing one key.
type UsageGroup struct {
	Key              string  `json:"key"`
	USD              float64 `json:"usd"`
	Calls            int     `json:"calls"`
	UnknownCostCalls int     `json:"unknown_cost_calls"`
	InputTokens      int     `json:"input_tokens"`
	OutputTokens     int     `json:"output_tokens"`
	// CachedInputTokens of InputTokens were read from the prompt cache,
	// which saved CacheSavedUSD against the full input price.
	CachedInputTokens int     `json:"cached_input_tokens"`
	CacheSavedUSD     float64 `json:"cache_saved_usd"`
}

func (g *UsageGroup) add(c UsageCall) {
	g.Calls++
	g.InputTokens += c.InputTokens
	g.OutputTokens += c.OutputTokens
	g.CachedInputTokens += c.CachedInputTokens
	g.CacheSavedUSD += c.CacheSavedUSD
	if c.CostUSD != nil {
		g.USD += *c.CostUSD
	}
	if c.Unknown() {
		g.UnknownCostCalls++
	}
}

// UsageReport is the ledger over a window: totals and groups, the groups
// sorted by key (days ascending, so a plot reads left to right).
type UsageReport struct {
	TotalUSD         float64 `json:"total_usd"`
	UnknownCostCalls int     `json:"unknown_cost_calls"`
	Calls            int     `json:"calls"`
	// CachedInputTokens and CacheSavedUSD: the prompt cache over the
	// window.
	CachedInputTokens int          `json:"cached_input_tokens"`
	CacheSavedUSD     float64      `json:"cache_saved_usd"`
	Groups            []UsageGroup `json:"groups"`
}

// UsageCalls returns the ledger's calls made in [from, to), oldest first.
func UsageCalls(db *bbolt.DB, from, to time.Time) ([]UsageCall, error) {
	var out []UsageCall
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketUsageCalls))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		end := timeKey(to)
		for k, v := c.Seek(timeKey(from)); k != nil && string(k[:8]) < string(end); k, v = c.Next() {
			var call UsageCall
			if err := json.Unmarshal(v, &call); err != nil {
				return fmt.Errorf("usage row %x: %w", k, err)
			}
			out = append(out, call)
		}
		return nil
	})
	return out, err
}

// UsageKey is the key of call under grouping by; days are the owner's (loc).
func UsageKey(c UsageCall, by string, loc *time.Location) string {
	switch by {
	case ByAgent:
		return c.Agent
	case ByConversation:
		return c.Conversation
	case ByRoute:
		return c.Route
	case ByDay:
		return c.At.In(loc).Format(time.DateOnly)
	}
	return c.Purpose
}

// SumUsage groups calls by one of UsageGroupings.
func SumUsage(calls []UsageCall, by string, loc *time.Location) UsageReport {
	rep := UsageReport{Groups: []UsageGroup{}}
	groups := map[string]*UsageGroup{}
	for _, c := range calls {
		k := UsageKey(c, by, loc)
		g := groups[k]
		if g == nil {
			g = &UsageGroup{Key: k}
			groups[k] = g
		}
		g.add(c)
		rep.Calls++
		rep.CachedInputTokens += c.CachedInputTokens
		rep.CacheSavedUSD += c.CacheSavedUSD
		if c.CostUSD != nil {
			rep.TotalUSD += *c.CostUSD
		}
		if c.Unknown() {
			rep.UnknownCostCalls++
		}
	}
	for _, g := range groups {
		rep.Groups = append(rep.Groups, *g)
	}
	slices.SortFunc(rep.Groups, func(a, b UsageGroup) int { return cmp.Compare(a.Key, b.Key) })
	return rep
}
