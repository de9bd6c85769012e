package telegram_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/telegram"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools/canvas"
)

// A reply line "FILE: artifact:<id>" sends that canvas's latest version:
// a document, an image as a photo; the line itself is not sent as text,
// and a canvas that does not exist gets a line saying so.
func TestTelegramFileArtifactSendsTheCanvas(t *testing.T) {
	c := newCrew(t)
	n := 0
	svc := &canvas.Service{Store: projections.CanvasStore{DB: c.db, NotFound: canvas.ErrNotFound}, Log: c.log, Fresh: c.runner,
		Clock: time.Now, NewID: func() string { n++; return "art" + string(rune('0'+n)) }}
	doc, err := svc.Create(t.Context(), canvas.Write{Title: "Trip plan", Kind: events.KindMarkdown, Content: "# Trip\n", Op: events.OpCreate, Author: "master"})
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\nrest of it")
	img, err := svc.Create(t.Context(), canvas.Write{Title: "Map", Kind: events.KindImage, MIME: "image/png", Content: base64.StdEncoding.EncodeToString(png), Op: events.OpImport, Author: "master"})
	if err != nil {
		t.Fatal(err)
	}
	s := newBotServer(t)
	g, err := telegram.Start(t.Context(), telegram.Config{
		Token: testToken, APIURL: s.URL, AllowedChatIDs: []int64{chat}, Workspace: c.workspace, Home: "/crew-home",
		Log: c.log, Inbound: c.in, Approvals: c.approver, Logger: c.logger, PollEvery: 20 * time.Millisecond, Artifact: svc.File,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s.push(textUpdate(1, chat, "files "+doc.Record.ID+" "+img.Record.ID+" nope"))
	eventstest.Eventually(t, "two files and the texts", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.files) == 2 && len(s.sent) >= 2
	})
	s.mu.Lock()
	files := append([]sentFile(nil), s.files...)
	s.mu.Unlock()
	if f := files[0]; f.Method != "sendDocument" || f.Name != "Trip plan.md" || string(f.Data) != "# Trip\n" {
		t.Errorf("document: %+v", f)
	}
	if f := files[1]; f.Method != "sendPhoto" || f.Name != "Map.png" || !bytes.Equal(f.Data, png) {
		t.Errorf("photo: %s %s %q", f.Method, f.Name, f.Data)
	}
	var texts []string
	for _, m := range s.sentTo(chat) {
		texts = append(texts, m.Text)
	}
	all := strings.Join(texts, "\n")
	if strings.Contains(all, "FILE:") || !strings.Contains(all, "Here they are.") || !strings.Contains(all, "canvas nope could not be sent") {
		t.Errorf("texts sent: %q", texts)
	}
}
