package web

import (
	"context"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/search"
	"github.com/my-agent-crew/crew/tools/canvas"
	"go.etcd.io/bbolt"
)

// Store is a crew's store as the gateway reads it; Config.On builds every
// view on it, so a new view that reads the store is a change in this
// package alone.
type Store struct {
	Log *events.Log
	DB  *bbolt.DB // the projections database
	// Fresh is the projections' read-your-writes (the Runner); nil: a
	// view shows what the projections have.
	Fresh projections.Freshness
	// Convs are the conversations' writers (loop.Convs); On needs them.
	Convs Convs
	// Home is the home directory; Spills keep the images tool results
	// carried (nil: files under Home's spill/).
	Home   string
	Spills Spills
	// Location is the owner's timezone, in which pages show times.
	Location *time.Location
	// Sessions are the web logins (nil: in memory); Live is the log's live
	// feed; Search the recall index (nil: no search).
	Sessions *Sessions
	Live     LiveFeed
	Search   *search.Index
}

// Convs are the conversations as the gateway reads and writes them
// (loop.Convs): their model-visible history, and the owner's open canvas.
type Convs interface {
	Histories
	Focuser
}

// Focuser stores a conversation's open canvas (canvas_focused, through
// the conversation's writer) and returns its sequence; an error matching
// refusal.ErrUnknownConversation for no such conversation.
type Focuser interface {
	FocusCanvas(ctx context.Context, conversation string, f events.CanvasFocused) (uint64, error)
}

// Running is what the views show of the running crew beside its store.
type Running struct {
	// Crew lists the agents (loop.CrewView) on the pages and holds the
	// workspaces a canvas is reimported from.
	Crew Crew
	// Banner is the line at the top of every page ("" for none).
	Banner string
	// Memory files, decides and rolls back memory proposals (/memory);
	// nil leaves memory out.
	Memory Consolidator
	// Budget is today's spend against the budgets (GET /api/budget).
	Budget func() any
	// Canvas is the canvas service (/api/artifacts, the canvas pages);
	// nil leaves the canvas out.
	Canvas *canvas.Service
	// Doors are the crew's ways in (inbound.NewDoors): POST /api/inbound,
	// and by id the approvals, the questions, the stops and the background
	// tasks; a nil door leaves its routes out.
	Doors inbound.Doors
}

// On is c serving a crew's store st: the API's views, the pages, memory,
// usage and the canvas read st, with what r gives them; the logins, the
// live feed and search are st's, the doors r's.
func (c Config) On(st Store, r Running) Config {
	c.Log = st.Log
	c.Sessions = st.Sessions
	c.Live = st.Live
	c.Search = st.Search
	c.Views = ProjectionViews{DB: st.DB, Convs: st.Convs, Log: st.Log, Fresh: st.Fresh}
	c.Pages = &Pages{DB: st.DB, Log: st.Log, Crew: r.Crew, Banner: r.Banner, Fresh: st.Fresh, Home: st.Home, Spills: st.Spills,
		Location: st.Location, Clock: time.Now}
	if r.Memory != nil {
		c.Memory = &Memory{Service: r.Memory, DB: st.DB, Fresh: st.Fresh, Log: st.Log, Location: st.Location}
	}
	c.Usage = &Usage{DB: st.DB, Location: st.Location, Log: st.Log, Fresh: st.Fresh, Budget: r.Budget}
	if r.Canvas != nil {
		c.Canvas = &CanvasAPI{Service: r.Canvas, Crew: r.Crew, Focus: st.Convs, Fresh: st.Fresh}
	}
	return c.through(r.Doors)
}

// through is c with the doors of d that are there (a nil pointer in an
// interface field would look like a door).
func (c Config) through(d inbound.Doors) Config {
	if d.Inbound != nil {
		c.Inbound = d.Inbound
	}
	if d.Approvals != nil {
		c.Approvals = d.Approvals
	}
	if d.Questions != nil {
		c.Questions = d.Questions
	}
	if d.Stops != nil {
		c.Stops = d.Stops
		c.Tasks = d.Stops
	}
	return c
}
