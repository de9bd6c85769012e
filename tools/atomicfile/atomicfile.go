// Package atomicfile writes files so that a crash leaves the old file or the
// new one, never half of either. It knows nothing of secrets: tools.WriteAtomic
// redacts before it calls Write.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Write replaces name beneath root with data: a temp file in the same
// directory, fsync, rename, then fsync of the directory, so a crash leaves
// either the old file or the new one. Missing parent directories are made.
// With exact the file's permission bits are set to perm before it is
// visible; without, an existing file keeps its bits and a new one gets perm.
func Write(root *os.Root, name string, data []byte, perm fs.FileMode, exact bool) error {
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
