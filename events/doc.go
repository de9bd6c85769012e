// Package events is the log every other package stands on: typed, versioned
// events appended to an embedded NATS JetStream stream and read back by
// subject.
//
// # Subjects
//
// One stream, CREW, holds every event under "crew.>". A subject names the
// scope an event belongs to and its type, so one conversation (or job, or
// canvas) can be replayed or exported alone:
//
//	crew.conv.<conversation>.<type>
//	crew.job.<job>.<type>
//	crew.tg.<bot>.<type>       a Telegram bot's polling offset
//	crew.mcp.<server>.<type>   a stdio MCP server's restarts
//	crew.agent.<agent>.<type>  an agent's memory proposals
//	crew.canvas.<artifact>.<type>
//
// # Guarantees
//
//   - Append returns only after JetStream has stored the event; with
//     nats.sync "always" (the default) it is also fsynced: one fsync for
//     the append's events and every append deferred before it
//     (Deferred), shared with appends at the same moment (ADR 0008).
//   - Append states what it expects: the stream sequence of the last event in
//     the scope. A scope therefore has a single writer; a lost race is
//     ErrConflict, never a silent interleave.
//   - Every event carries a unique id used as the JetStream message id, so an
//     Append retried after a timeout is stored once (within the dedupe window).
//   - Read yields a scope's events in stream order. An event of an unknown type
//     or of a newer version than this build knows fails with its subject and
//     sequence (DecodeError); it is never skipped.
package events
