package projections

import (
	"golang.org/x/sys/unix"
)

// releaseMapped tells the kernel the size bytes mapped at data are not
// needed: for bbolt's read-only shared file mapping that unmaps the pages
// from this process only (MADV_DONTNEED never discards file contents of
// a shared mapping).
func releaseMapped(data uintptr, size int64) error {
	if data == 0 || size <= 0 {
		return nil
	}
	page := int64(unix.Getpagesize())
	size = size / page * page // bbolt's pages are whole OS pages: this rounds nothing away
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, data, uintptr(size), unix.MADV_DONTNEED); errno != 0 {
		return errno
	}
	return nil
}
