package web

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/my-agent-crew/crew/tools/atomicfile"
)

// DownloadsDir is where fetched and downloaded files land, relative to
// the workspace.
const DownloadsDir = "downloads"

// MaxDownloadBytes caps one saved file.
const MaxDownloadBytes = 25 << 20

// ErrTooLarge: a file is over MaxDownloadBytes.
var ErrTooLarge = fmt.Errorf("larger than %d MiB", MaxDownloadBytes>>20)

// SafeName turns a name a page chose into one plain file name: no
// directories, no leading dots, no control or shell-special characters,
// at most 100 bytes, never empty.
func SafeName(name, fallback string) string {
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '/' || r == 0 || unicode.IsControl(r) || strings.ContainsRune(`<>:"|?*$;&`+"`", r):
			b.WriteRune('_')
		case unicode.IsSpace(r):
			b.WriteRune(' ')
		default:
			b.WriteRune(r)
		}
	}
	out := strings.TrimLeft(strings.TrimSpace(b.String()), "._-")
	for len(out) > 100 {
		ext := filepath.Ext(out)
		if len(ext) > 10 {
			ext = ""
		}
		r := []rune(strings.TrimSuffix(out, ext))
		out = string(r[:len(r)-1]) + ext
	}
	if out == "" || out == "." {
		out = fallback
	}
	return out
}

// SaveDownload writes data as downloads/<SafeName(name)> in workspace,
// adding -1, -2… before the extension rather than replacing a file, and
// returns the workspace-relative path.
func SaveDownload(workspace, name string, data []byte) (string, error) {
	if len(data) > MaxDownloadBytes {
		return "", ErrTooLarge
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return "", fmt.Errorf("downloads: %w", err)
	}
	defer root.Close()
	if err := root.Mkdir(DownloadsDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("downloads: %w", err)
	}
	name = SafeName(name, "download")
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 0; i < 1000; i++ {
		cand := name
		if i > 0 {
			cand = fmt.Sprintf("%s-%d%s", stem, i, ext)
		}
		rel := DownloadsDir + "/" + cand
		if _, err := root.Lstat(rel); err == nil {
			continue
		}
		if err := atomicfile.Write(root, rel, data, 0o644, false); err != nil {
			return "", fmt.Errorf("downloads: %w", err)
		}
		return rel, nil
	}
	return "", fmt.Errorf("downloads: too many files named %s", name)
}
