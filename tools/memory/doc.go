// Package memory is what an agent remembers between turns and how it is
// told: the turn notes that travel with a turn-opening message (R-CTX-2),
// the helpers to summarise a conversation, and the tools that write and
// search the agent's notes, the owner's facts and the shared wiki.
//
// # Turn notes
//
// What changes between two turns of one conversation (the summary of the
// previous conversation on the channel, yesterday's and today's daily notes)
// does not go in the system prompt, which stays byte-stable for the
// provider's cache. Items reads those items; Compose compares each with what
// the conversation was last told (length and digest, read back from the
// stored messages) and returns only what changed, to be stored with the
// message and never rewritten: an untold item whole, a note that only grew
// its new lines, a rewritten item whole and marked as replacing the old
// version, an emptied item one line. Nothing new gives nil, and the message
// reaches the model exactly as written.
//
// # Writes
//
// Every write goes through a tool, so it is an event before it is a file:
// the loop stores tool_called (with the arguments, which hold everything
// written) before the tool runs and tool_completed after, in the same step.
// The log therefore records each write first, and a crash between the two
// leaves a call without a completion, never a file change the log lacks.
//
// Files are replaced atomically (temp file, fsync, rename in the same
// directory) under a lock held across read-modify-write, so two
// conversations appending to one file do not lose a line. The tools never
// take a path from the model: they build paths from Env.AgentDir and
// Env.HomeDir and names checked against NamePattern, and open files through
// an os.Root so a symlink cannot lead outside. A missing AgentDir or HomeDir
// is a harness fault (ErrNoDir), not a write somewhere else.
package memory
