package home

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// templates holds the built-in agents that `crew agent add` installs
// (R-HOME-5): one folder per template with agent.yaml, AGENTS.md, SOUL.md
// and MEMORY.md.
//
//go:embed templates
var templates embed.FS

// templateDirs are created empty in every installed agent.
var templateDirs = []string{"memory", "workspace"}

// Templates lists the built-in agent templates, sorted.
func Templates() []string {
	entries, err := templates.ReadDir("templates")
	if err != nil {
		return nil // cannot happen: the folder is embedded
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// AddAgent installs the built-in template as agents/<template>/ of the home
// at homeDir and returns the new folder. It refuses an unknown template and
// an existing folder, changing nothing. The agent is assembled in a hidden
// folder next to its final place and renamed into place last, so an
// interrupted install leaves no half-made agent behind.
func AddAgent(homeDir, template string) (dir string, err error) {
	if !slices.Contains(Templates(), template) {
		return "", fmt.Errorf("add agent: unknown template %q (known: %s)", template, strings.Join(Templates(), ", "))
	}
	homeDir, err = filepath.Abs(homeDir)
	if err != nil {
		return "", fmt.Errorf("add agent: %w", err)
	}
	if _, err := os.Stat(filepath.Join(homeDir, "config.yaml")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf(`add agent: no home at %s (run "crew init" first)`, homeDir)
		}
		return "", fmt.Errorf("add agent: %w", err)
	}
	return placeTemplate(homeDir, template)
}

// placeTemplate installs template as agents/<template>/ of homeDir, or
// refuses when that folder exists.
func placeTemplate(homeDir, template string) (dir string, err error) {
	agents := filepath.Join(homeDir, "agents")
	dir = filepath.Join(agents, template)
	if _, err := os.Lstat(dir); err == nil {
		return "", fmt.Errorf("add agent: %s already exists; remove or rename it first (nothing changed)", dir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("add agent: %w", err)
	}
	if err := os.MkdirAll(agents, 0o700); err != nil {
		return "", fmt.Errorf("add agent: %w", err)
	}
	// The leading dot keeps the loader away from the unfinished folder.
	tmp, err := os.MkdirTemp(agents, "."+template+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("add agent: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	if err = installTemplate(template, tmp); err != nil {
		return "", fmt.Errorf("add agent %s: %w", template, err)
	}
	// Check again right before the rename: on Linux a rename onto an empty
	// directory would succeed and replace it.
	if _, err = os.Lstat(dir); err == nil {
		err = fmt.Errorf("add agent: %s already exists; remove or rename it first (nothing changed)", dir)
		return "", err
	}
	if err = os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("add agent: %w", err)
	}
	if err = syncDir(agents); err != nil {
		return "", fmt.Errorf("add agent: %w", err)
	}
	return dir, nil
}

// installTemplate writes the files of a template and its empty folders into dir.
func installTemplate(template, dir string) error {
	if err := os.Chmod(dir, 0o700); err != nil { // MkdirTemp makes 0700 already; be explicit
		return err
	}
	for _, d := range templateDirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	root := path.Join("templates", template)
	entries, err := templates.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := templates.ReadFile(path.Join(root, e.Name()))
		if err != nil {
			return err
		}
		if err := WriteFileAtomic(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
