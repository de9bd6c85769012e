package tools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/my-agent-crew/crew/events"
)

// WriteAtomic replaces name beneath root with data: a temp file in the same
// directory, fsync, rename, then fsync of the directory, so a crash leaves
// either the old file or the new one. Missing parent directories are made.
// An existing file keeps its permission bits; a new one gets perm.
//
// It is the one writer of files the harness writes for an agent (memory,
// facts, wiki, spills, workspace writes): every known secret is redacted
// from data first (events.Secrets, R-X-6).
func WriteAtomic(root *os.Root, name string, data []byte, perm fs.FileMode) error {
	return writeAtomic(root, name, events.Secrets().Bytes(data), perm, false)
}

// WriteAtomicExact is WriteAtomic with the file's permission bits set to
// exactly perm, whatever they were and whatever the umask: for files whose
// mode is part of their safety (the home's env file, serve.json). It writes
// data as given, unredacted: it is the atomic writer of cmd/crew/home,
// whose env file holds the very secrets WriteAtomic redacts.
func WriteAtomicExact(root *os.Root, name string, data []byte, perm fs.FileMode) error {
	return writeAtomic(root, name, data, perm, true)
}

func writeAtomic(root *os.Root, name string, data []byte, perm fs.FileMode, exact bool) error {
	dir := filepath.Dir(name)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if fi, err := root.Stat(name); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", name)
		}
		if !exact {
			perm = fi.Mode().Perm()
		}
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+filepath.Base(name)+".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if exact {
		err = f.Chmod(perm) // before it is visible
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
		return err
	}
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) { // some filesystems cannot sync a directory
		return nil
	}
	return err
}
