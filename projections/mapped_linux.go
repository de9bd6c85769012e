package projections

import (
	"bufio"
	"os"
	"strconv"
	"strings"

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

// releaseExecutable tells the kernel this process's pages of its own
// executable's read-only private mappings (its code and read-only data)
// are not needed: their next use faults them in again from the page
// cache, unchanged. A mapping with a page of its own (copied on write,
// as relocations can leave) is left alone: MADV_DONTNEED would put the
// file's page back in its place.
func releaseExecutable() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return err
	}
	defer f.Close()
	type mapping struct {
		start, end uint64
		clean      bool // read-only, private, of exe, with no page of its own
	}
	var ranges []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			// start-end perms offset dev inode path: a mapping's first line
			lo, hi, _ := strings.Cut(fields[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			perms := fields[1]
			ok := err1 == nil && err2 == nil && end > start && len(perms) == 4 &&
				perms[1] == '-' && perms[3] == 'p' && len(fields) >= 6 && strings.Join(fields[5:], " ") == exe
			ranges = append(ranges, mapping{start, end, ok})
			continue
		}
		if len(fields) == 3 && fields[0] == "Anonymous:" && fields[1] != "0" && len(ranges) > 0 {
			ranges[len(ranges)-1].clean = false
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, m := range ranges {
		if !m.clean {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), unix.MADV_DONTNEED); errno != 0 {
			return errno
		}
	}
	return nil
}
