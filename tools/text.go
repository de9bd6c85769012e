package tools

import (
	"bytes"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits shared by the workspace tools.
const (
	maxFileBytes = 10 << 20 // larger files are refused by read and edit, skipped by grep
	maxLineChars = 2000     // longer lines are cut in read output
)

// binary reports whether data looks like something other than UTF-8 text.
func binary(data []byte) bool {
	head := data[:min(len(data), 8000)]
	return bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(trimPartialRune(head))
}

// trimPartialRune drops an incomplete rune at the end of a prefix.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		r, size := utf8.DecodeLastRune(b)
		if r != utf8.RuneError || size > 1 {
			return b
		}
		b = b[:len(b)-1]
	}
	return b
}

// cutLine shortens s to max characters, marking the cut.
func cutLine(s string, max int) string {
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + " … [line cut]"
		}
		n++
	}
	return s
}

// sizeText is a file size for listings.
func sizeText(fi fs.FileInfo) string {
	n := fi.Size()
	switch {
	case n < 10<<10:
		return strconv.FormatInt(n, 10) + " B"
	case n < 10<<20:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	default:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
}

// LineCount is how many lines s holds; a final newline ends the last line
// rather than starting another.
func LineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}
