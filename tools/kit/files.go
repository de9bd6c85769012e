package kit

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// maxFileBytes bounds a kit file: skills and prompts go into a model's
// context, so anything bigger is a mistake.
const maxFileBytes = 1 << 20

// levels returns the folders whose kits apply, lowest precedence first: the
// home, then the agent's folder. Empty paths are skipped, and the master's
// folder, which is the home, is listed once.
func levels(homeDir, agentDir string) []string {
	var out []string
	if homeDir != "" {
		out = append(out, homeDir)
	}
	if agentDir != "" && (homeDir == "" || !sameDir(homeDir, agentDir)) {
		out = append(out, agentDir)
	}
	return out
}

// Dirs are the folders the kit commands and skills of homeDir and
// agentDir are read from (their *.md files, directly in each): what a
// cached prompt watches.
func Dirs(homeDir, agentDir string) []string {
	var out []string
	for _, level := range levels(homeDir, agentDir) {
		out = append(out, filepath.Join(level, ".agents/commands"), filepath.Join(level, "skills"))
	}
	return out
}

// sameDir reports whether a and b name the same folder, by path or, through
// symlinks, by identity.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ai, errA := os.Stat(a)
	bi, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ai, bi)
}

// markdownFiles returns the *.md files directly in dir, sorted by name. A
// missing dir has none. Hidden files (editor backups such as .#x.md) and
// anything that is not a regular file are skipped.
func markdownFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	var out []string
	for _, e := range entries { // ReadDir sorts by name
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".md") {
			continue
		}
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path) // follows symlinks
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		out = append(out, path)
	}
	return out, nil
}

// readKitFile reads one kit file, refusing oversized ones.
func readKitFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	if fi.Size() > maxFileBytes {
		return nil, &fileError{path: path, msg: fmt.Sprintf("%d bytes is over the %d KiB limit for a kit file", fi.Size(), maxFileBytes>>10)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	return data, nil
}

// baseName is a file's name without its .md extension.
func baseName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".md")
}

// checkName reports what is wrong with a skill, command or sub-agent name:
// it is typed after a slash or passed as an argument, so it must be one
// word.
func checkName(name string) string {
	if name == "" {
		return "the name is empty"
	}
	if strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' }) >= 0 {
		return fmt.Sprintf("the name %q has a space, a control character or a slash", name)
	}
	return ""
}

// oneLine collapses whitespace, so a description stays on its index line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// loadAll reads <level>/<sub>/*.md at every level with parse and merges them
// by name: a later level replaces an earlier one's item of the same name.
// Two files of one level with the same name are an error (the first is
// kept). Every file that fails is reported in the joined error, and the
// items that did load are still returned, sorted by name.
func loadAll[T any](homeDir, agentDir, sub string, parse func(path string, data []byte) (T, error), nameOf func(T) string) ([]T, error) {
	byName := map[string]T{}
	var errs []error
	for _, level := range levels(homeDir, agentDir) {
		files, err := markdownFiles(filepath.Join(level, sub))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seen := map[string]string{} // name → path, within this level
		for _, path := range files {
			data, err := readKitFile(path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			item, err := parse(path, data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			name := nameOf(item)
			if msg := checkName(name); msg != "" {
				errs = append(errs, &fileError{path: path, msg: msg})
				continue
			}
			if first, dup := seen[name]; dup {
				errs = append(errs, &fileError{path: path, msg: fmt.Sprintf("the name %q is already used by %s", name, first)})
				continue
			}
			seen[name] = path
			byName[name] = item
		}
	}
	var out []T
	for _, item := range byName {
		out = append(out, item)
	}
	slices.SortFunc(out, func(a, b T) int { return cmp.Compare(nameOf(a), nameOf(b)) })
	return out, errors.Join(errs...)
}
