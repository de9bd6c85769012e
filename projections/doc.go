// Package projections builds read models of the event log in bbolt: the
// conversation list, runs with their steps, jobs, conversation summaries,
// memory proposals, the usage ledger and each conversation's chat as its
// page shows it (Chat) (All). The same file caches the
// turns' state snapshots, which are not a projection (Snapshots).
// Projections at the same checkpoint share one durable JetStream pull
// consumer; each can be thrown away and rebuilt from the log at any time;
// no business decision lives here.
//
// # Delivery semantics
//
//   - Ordered, in batches: one goroutine per group of projections (those at
//     the same checkpoint at Open: all of them, normally) reads a consumer
//     filtered on "crew.>" and applies the events already delivered (up to
//     4000) in stream sequence order, each decoded once (beside the batch
//     before, by the goroutine reading the consumer), in one bbolt
//     transaction; a projection that is Selective is given only the events
//     it wants. Within a batch the records rewritten by most events (a
//     conversation's, a run's) are decoded once and written once at the
//     commit (recordCache). Catching up fills the batches; live events
//     that follow one another (a step's) share one: a batch short of the
//     bound stays open for at most 50 ms for what follows, and commits at
//     once when a WaitFor caller waits for one of its events, so a reader
//     that waits sees an event as soon as it would alone, and one that
//     does not sees it at most 50 ms later.
//     A projection behind the others (added by an upgrade, rebuilt) is its
//     own group and catches up beside them without holding them.
//   - At-least-once delivery, exactly-once apply: a batch is applied and each
//     projection's checkpoint (the stream sequence it has applied up to,
//     bucket "_checkpoints") is written in the same bbolt transaction, and
//     the batch is acknowledged (its newest message, AckAll) only after
//     that transaction commits. An event redelivered after a crash between
//     commit and ack has a sequence at or below the checkpoint and is
//     skipped.
//   - The bbolt checkpoint is the truth, not the consumer: on Open, a
//     consumer whose ack floor differs from the checkpoint (bbolt file
//     deleted or restored, unacknowledged messages left by a crash) is
//     deleted and recreated to start at checkpoint+1.
//   - A failing event stops its projection rather than being skipped: an
//     event of an unknown type or newer version, or one whose Apply fails,
//     leaves the checkpoint before it (the batch's events before it are
//     committed on their own), is not acknowledged, is logged once
//     and is reported by Runner.Status with its subject and sequence. The
//     other projections go on. Restarting (after an upgrade or a fix)
//     resumes at that event. The exception is a conversation's event this
//     build cannot decode: every projection passes it (recorded in bucket
//     "_undecodable"), the conversation shows as parked at its subject and
//     sequence (R-X-4), and the rest of the log goes on; once a later
//     build can read a recorded event, Open rebuilds the projections.
//   - Apply is deterministic: it uses only the event (its data, subject,
//     sequence and Time), never the clock or map order, so Rebuild (batched
//     transactions of its own) gives byte-identical buckets to live
//     application; Dump compares them.
//
// Views are JSON values of plain structs under big-endian or sortable keys.
// Readers (ListConversations, GetRun, ...) open their own read transaction;
// Runner.WaitFor gives read-your-writes after an append.
package projections
