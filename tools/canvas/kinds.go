package canvas

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"
	"github.com/my-agent-crew/crew/events"
)

// Per-version caps by kind (R-CAN): a version over its cap is refused
// whole. An image's cap is on its bytes, not their base64.
const (
	TextCap  = 512 << 10 // markdown, code, mermaid
	HTMLCap  = 4 << 20
	SVGCap   = 2 << 20
	ImageCap = 2 << 20
)

// DefaultMaxBytes is the store-wide cap over every version kept, unless
// config.yaml's canvas_max_bytes says otherwise. Agents stop writing at
// AgentShare of it; the owner can fill it.
const (
	DefaultMaxBytes = 1 << 30
	AgentShare      = 0.9
)

// Kinds lists the canvas kinds.
var Kinds = []string{events.KindMarkdown, events.KindCode, events.KindMermaid, events.KindHTML, events.KindSVG, events.KindImage}

// Cap is the per-version cap of kind.
func Cap(kind string) int {
	switch kind {
	case events.KindHTML:
		return HTMLCap
	case events.KindSVG:
		return SVGCap
	case events.KindImage:
		return ImageCap
	}
	return TextCap
}

// checkKind says why kind (with language) cannot be a canvas kind.
func checkKind(kind, language string) error {
	switch kind {
	case events.KindMarkdown, events.KindMermaid, events.KindHTML, events.KindSVG, events.KindImage:
		if language != "" {
			return fmt.Errorf("%w: language goes with kind code only", ErrBadKind)
		}
		return nil
	case events.KindCode:
		if language == "" || len(language) > 40 || strings.ContainsAny(language, " \t\n/\\") {
			return fmt.Errorf("%w: kind code needs a language name (go, python, sql, …)", ErrBadKind)
		}
		return nil
	}
	return fmt.Errorf("%w: kind %q: want one of %s", ErrBadKind, kind, strings.Join(Kinds, ", "))
}

// checkSize refuses content over its kind's cap, whole. content is what
// is stored (an image's base64).
func checkSize(kind, content string) error {
	n := len(content)
	if kind == events.KindImage {
		n = base64.StdEncoding.DecodedLen(len(content))
	}
	if n > Cap(kind) {
		return fmt.Errorf("%w: %d bytes, a %s version holds at most %d; nothing was written", ErrTooLarge, n, kind, Cap(kind))
	}
	if kind != events.KindImage && !utf8.ValidString(content) {
		return fmt.Errorf("%w: the content is not UTF-8 text", ErrBadKind)
	}
	return nil
}

// ImageMIME names the image format of data by its magic bytes (PNG, JPEG,
// GIF, WebP), "" for anything else.
func ImageMIME(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "image/gif"
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// languages maps file extensions to the language of a code canvas.
var languages = map[string]string{
	".go": "go", ".py": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript", ".tsx": "tsx", ".jsx": "jsx",
	".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".java": "java", ".kt": "kotlin",
	".swift": "swift", ".rb": "ruby", ".php": "php", ".sh": "bash", ".bash": "bash", ".zsh": "zsh", ".sql": "sql",
	".css": "css", ".scss": "scss", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".xml": "xml",
	".lua": "lua", ".r": "r", ".cs": "csharp", ".txt": "text", ".csv": "csv", ".ini": "ini", ".dockerfile": "dockerfile",
}

// KindOf infers a file's canvas kind (and language) from its extension:
// "" when the extension says nothing known.
func KindOf(name string) (kind, language string) {
	ext := strings.ToLower(path.Ext(name))
	switch ext {
	case ".md", ".markdown":
		return events.KindMarkdown, ""
	case ".mmd", ".mermaid":
		return events.KindMermaid, ""
	case ".html", ".htm":
		return events.KindHTML, ""
	case ".svg":
		return events.KindSVG, ""
	case ".png", ".jpg", ".jpeg", ".gif", ".webp":
		return events.KindImage, ""
	}
	if l, ok := languages[ext]; ok {
		return events.KindCode, l
	}
	return "", ""
}

// Extension is the file extension a download of kind gets.
func Extension(kind, language, mime string) string {
	switch kind {
	case events.KindMarkdown:
		return ".md"
	case events.KindMermaid:
		return ".mmd"
	case events.KindHTML:
		return ".html"
	case events.KindSVG:
		return ".svg"
	case events.KindImage:
		return "." + strings.TrimPrefix(strings.Replace(mime, "jpeg", "jpg", 1), "image/")
	}
	exts := slices.Sorted(maps.Keys(languages))
	if i := slices.IndexFunc(exts, func(e string) bool { return languages[e] == language }); i >= 0 {
		return exts[i] // the first in order: .c before .h, .js before .mjs
	}
	return ".txt"
}

// ContentType is the media type a download of kind is served as.
func ContentType(kind, mime string) string {
	switch kind {
	case events.KindImage:
		return mime
	case events.KindHTML:
		return "text/html; charset=utf-8"
	case events.KindSVG:
		return "image/svg+xml"
	case events.KindMarkdown:
		return "text/markdown; charset=utf-8"
	}
	return "text/plain; charset=utf-8"
}

// Diff is the unified diff from old to new, labelled with the versions.
func Diff(title string, from, to int, old, new string) string {
	return udiff.Unified(fmt.Sprintf("%s v%d", title, from), fmt.Sprintf("%s v%d", title, to), old, new)
}

// lines splits text into lines without their "\n".
func lines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// FileName makes a canvas title a safe file name.
func FileName(title string) string {
	var b strings.Builder
	for _, r := range title {
		switch {
		case r < 0x20, strings.ContainsRune(`/\:*?"<>|`, r):
			b.WriteRune('_')
		default:
			b.WriteRune(r)
		}
	}
	name := strings.Trim(b.String(), ". ")
	if name == "" {
		return "canvas"
	}
	return name
}
