package view

import "time"

// RecallQuery is one recall as the recall tool asks it of the search
// projection (tools/recall.Query is this).
type RecallQuery struct {
	Text  string
	Scope string // conversations, memory, canvas or all; "" is all
	Since time.Time
	Agent string
	Limit int
}

// RecallHit is one thing recall found, as the recall tools and the turn
// notes tell it (tools/recall.Hit is this).
type RecallHit struct {
	Kind    string
	Source  string // "conversation web-20261014 · 2026-10-14 · step 3"
	Link    string // the owner's page for it
	Ref     string // what recall_open takes
	Snippet string
}
