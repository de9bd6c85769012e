package kit

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
)

// fileError is a problem in one of the owner's files, located for an
// editor: "path:line:col: message" (line and col are omitted when zero).
type fileError struct {
	path      string
	line, col int
	msg       string
	err       error // the decoder's error, if any
}

func (e *fileError) Error() string {
	switch {
	case e.line > 0 && e.col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.path, e.line, e.col, e.msg)
	case e.line > 0:
		return fmt.Sprintf("%s:%d: %s", e.path, e.line, e.msg)
	default:
		return fmt.Sprintf("%s: %s", e.path, e.msg)
	}
}

func (e *fileError) Unwrap() error { return e.err }

// parseFrontMatter splits a markdown file into its optional YAML front matter,
// decoded into v, and the body, trimmed. Front matter is present when the
// first line is "---"; it ends at the next line that is "---". A file without
// it is all body and leaves v alone. Keys v does not know are ignored, so
// files written for other harnesses (Claude Code adds keys such as
// allowed-tools) still load. Line numbers in errors count from the file's
// first line. CRLF line ends and a UTF-8 byte order mark are accepted.
func parseFrontMatter(path string, data []byte, v any) (body string, err error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return strings.TrimSpace(text), nil
	}
	var front string
	found := false
	for off := 0; off <= len(rest); {
		line, _, _ := strings.Cut(rest[off:], "\n")
		if strings.TrimRight(line, " \t") == "---" {
			front, body = rest[:off], rest[min(off+len(line)+1, len(rest)):]
			found = true
			break
		}
		off += len(line) + 1
	}
	if !found {
		return "", &fileError{path: path, line: 1, msg: "front matter opened with --- is never closed by a --- line"}
	}
	if strings.TrimSpace(front) != "" {
		if err := yaml.Unmarshal([]byte(front), v); err != nil {
			return "", yamlError(path, 1, err)
		}
	}
	return strings.TrimSpace(body), nil
}

// yamlError locates a goccy/go-yaml error in the file, whose YAML starts
// after lineOffset lines.
func yamlError(path string, lineOffset int, err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		return &fileError{path: path, msg: "front matter: " + err.Error(), err: err}
	}
	msg := ye.GetMessage()
	var te *yaml.TypeError
	if errors.As(err, &te) && te.DstType != nil && te.SrcType != nil {
		// The decoder's message names Go types and struct fields.
		msg = fmt.Sprintf("want %s here, not %s", kindWord(te.DstType), kindWord(te.SrcType))
	}
	// Positions inside the message ("already defined at [1:1]") count from
	// the front matter too.
	msg = yamlPos.ReplaceAllStringFunc(msg, func(m string) string {
		var line, col int
		fmt.Sscanf(m, "[%d:%d]", &line, &col)
		return fmt.Sprintf("[%d:%d]", line+lineOffset, col)
	})
	pos := ye.GetToken().Position
	return &fileError{path: path, line: pos.Line + lineOffset, col: pos.Column, msg: msg, err: err}
}

var yamlPos = regexp.MustCompile(`\[\d+:\d+\]`)

// kindWord names a YAML value's kind for the owner.
func kindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "text"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "a " + t.String()
	}
}
