// Package memory holds the tools that write and search what an agent
// remembers: its daily notes and MEMORY.md, the owner's facts and the shared
// wiki. How the notes reach the next turn is loop/notes; the rewrite of
// MEMORY.md from the notes is loop/consolidate.
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
// directory) under a lock held across read-modify-write, one per tool set
// (Tools), so two conversations appending to one file do not lose a line. The tools never
// take a path from the model: they build paths from Env.AgentDir and
// Env.HomeDir and names checked against NamePattern, and open files through
// an os.Root so a symlink cannot lead outside. A missing AgentDir or HomeDir
// is a harness fault (ErrNoDir), not a write somewhere else.
package memory
