package inbound

import (
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
	"go.etcd.io/bbolt"
)

// Doors are the gateways' ways into the crew, one of each per process
// (the web pages and API, Telegram, /mcp, crew stop): the owner's
// messages and, by id, the approvals, the questions and the stops.
type Doors struct {
	Inbound *Inbound
	// Approvals decides approvals by id (web forms and API, Telegram).
	Approvals *Approvals
	Questions *Questions
	// Stops is the owner's stop (web, API, Telegram, crew stop).
	Stops *Stops
}

// ByID is what the doors by id are built on: they find the conversation
// in the projections' indexes, after reading their writes, and ask the
// worker there.
type ByID struct {
	Log *events.Log
	DB  *bbolt.DB // the projections database, with the approvals and questions indexes
	// Fresh is the projections' read-your-writes (the Runner).
	Fresh  projections.Freshness
	Worker *loop.Worker
}

// NewDoors are the doors of in (the messages) and, on by, of the
// approvals, the questions and the stops.
func NewDoors(in *Inbound, by ByID) Doors {
	return Doors{Inbound: in, Approvals: &Approvals{by}, Questions: &Questions{by}, Stops: &Stops{by}}
}
