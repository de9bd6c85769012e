// Package consolidate rewrites an agent's MEMORY.md from its recent notes
// as a proposal that code, not the model, classifies (R-MEM-2).
//
// Consolidate reads MEMORY.md and the notes of the last 7 days
// (memory/YYYY-MM-DD.md, days in the owner's timezone), asks the agent's
// routes in order for a rewrite, and files memory_proposed on the agent's
// scope (crew.agent.<id>) with Kind from Classify, a line diff of old and
// new. A proposal is applied without a human only when the agent is
// autonomous and the kind is add_only or date_only; every other proposal
// waits for Decide.
//
// # Ordering and concurrency
//
//   - The event comes first, the file second: memory_proposal_decided
//     (approved or auto_applied) is stored, then MEMORY.md is written
//     atomically (temp file, fsync, rename); memory_rolled_back is stored,
//     then the old text is written back. A crash in between leaves the log
//     saying more than the file; the next Decide or Rollback compares the
//     file with the proposal and refuses rather than guesses.
//   - Appends state the agent scope's last sequence, so two decisions on
//     one proposal cannot both be stored, even from two processes: the
//     loser re-reads and gets ErrAlreadyDecided.
//   - Proposal state is folded from the agent's scope itself (the rules of
//     the memory projection, which the pages read), and the fold's last
//     sequence is the next append's expectation: no read model is waited
//     for, and a decision is never taken on a stale view.
//   - Within the process one mutex orders every check-append-write, so a
//     decision never writes over a file another decision is writing.
//   - Approve and Rollback refuse (ErrMemoryChanged) when MEMORY.md is not
//     what the proposal expects (Old for approve, New for rollback): the
//     owner or the agent changed it since, and that change is not lost.
package consolidate
