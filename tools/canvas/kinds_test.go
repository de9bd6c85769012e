package canvas_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/canvas"
)

// Images are told by their magic bytes, never by their name.
func TestCanvasImageMIMEByMagicBytes(t *testing.T) {
	for data, want := range map[string]string{
		"\x89PNG\r\n\x1a\nxx":          "image/png",
		"\xff\xd8\xff\xe0xx":           "image/jpeg",
		"GIF89a..":                     "image/gif",
		"GIF87a..":                     "image/gif",
		"RIFF\x00\x00\x00\x00WEBPVP8 ": "image/webp",
		"RIFF\x00\x00\x00\x00WAVE":     "",
		"<svg xmlns=...>":              "",
		"\x89PNG":                      "",
		"":                             "",
	} {
		if got := canvas.ImageMIME([]byte(data)); got != want {
			t.Errorf("ImageMIME(%q) = %q, want %q", data, got, want)
		}
	}
}

// A file's kind comes from its extension; downloads get the kind's.
func TestCanvasKindFromExtension(t *testing.T) {
	for name, want := range map[string][2]string{
		"a.md": {events.KindMarkdown, ""}, "B.MARKDOWN": {events.KindMarkdown, ""}, "d.mmd": {events.KindMermaid, ""},
		"p.html": {events.KindHTML, ""}, "x.svg": {events.KindSVG, ""}, "i.JPG": {events.KindImage, ""},
		"main.go": {events.KindCode, "go"}, "q.sql": {events.KindCode, "sql"}, "noext": {"", ""}, "a.exe": {"", ""},
	} {
		if k, l := canvas.KindOf(name); k != want[0] || l != want[1] {
			t.Errorf("KindOf(%s) = %s %s, want %v", name, k, l, want)
		}
	}
	for _, c := range []struct{ kind, lang, mime, want string }{
		{events.KindCode, "go", "", ".go"}, {events.KindCode, "c", "", ".c"}, {events.KindCode, "javascript", "", ".js"},
		{events.KindCode, "klingon", "", ".txt"}, {events.KindImage, "", "image/jpeg", ".jpg"}, {events.KindMermaid, "", "", ".mmd"},
	} {
		if got := canvas.Extension(c.kind, c.lang, c.mime); got != c.want {
			t.Errorf("Extension(%s %s %s) = %s, want %s", c.kind, c.lang, c.mime, got, c.want)
		}
	}
	if got := canvas.FileName(`a/b:c*"d".`); strings.ContainsAny(got, `/:*"`) || got == "" {
		t.Errorf("FileName = %q", got)
	}
}

// Without a store the service refuses plainly instead of failing later.
func TestCanvasServiceWithoutStoreIsUnavailable(t *testing.T) {
	var s *canvas.Service
	if _, err := s.Get("a1"); !errors.Is(err, canvas.ErrUnavailable) {
		t.Errorf("Get on no service: %v", err)
	}
	res, err := canvas.Tools(nil, tools.Services{})[1].Run(t.Context(), toolsEnv(), nil)
	if err != nil || !res.IsError || !strings.Contains(res.Output, "not available") {
		t.Errorf("artifact_list with no service: %+v %v", res, err)
	}
}

func toolsEnv() tools.Env { return tools.Env{AgentID: "master", Conversation: "c1"} }
