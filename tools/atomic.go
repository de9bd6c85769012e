package tools

import (
	"io/fs"
	"os"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/atomicfile"
)

// WriteAtomic replaces name beneath root with data: a temp file in the same
// directory, fsync, rename, then fsync of the directory, so a crash leaves
// either the old file or the new one. Missing parent directories are made.
// An existing file keeps its permission bits; a new one gets perm.
//
// It is the one writer of files the harness writes for an agent (memory,
// facts, wiki, spills, workspace writes): every secret r knows (the home's,
// Env.Secrets) is redacted from data first (R-X-6).
func WriteAtomic(r *events.Redactor, root *os.Root, name string, data []byte, perm fs.FileMode) error {
	return atomicfile.Write(root, name, r.Bytes(data), perm, false)
}

// WriteAtomicExact is WriteAtomic with the file's permission bits set to
// exactly perm, whatever they were and whatever the umask: for files whose
// mode is part of their safety (the home's env file, serve.json). It writes
// data as given, unredacted: it is the atomic writer of cmd/crew/home,
// whose env file holds the very secrets WriteAtomic redacts.
func WriteAtomicExact(root *os.Root, name string, data []byte, perm fs.FileMode) error {
	return atomicfile.Write(root, name, data, perm, true)
}
