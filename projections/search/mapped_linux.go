package search

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseMapped tells the kernel the read-only shared mappings of the
// files in paths (/proc/self/maps) are not needed: for such a mapping
// MADV_DONTNEED unmaps the pages from this process only and never
// discards file contents. Any other mapping is left alone.
func releaseMapped(paths map[string]bool) error {
	if len(paths) == 0 {
		return nil
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return fmt.Errorf("search index: release mapped pages: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "r--s" || !paths[strings.Join(fields[5:], " ")] {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("search index: release mapped pages: %w", errno)
		}
	}
	return sc.Err()
}
