package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
)

// Item 11: attachments must be existing files inside the agent's
// workspace, named relative to it; anything else is 422 naming the path,
// and nothing is stored.
func TestInboundAttachmentOutsideWorkspaceRefused(t *testing.T) {
	_, log := eventstest.Start(t)
	home := t.TempDir()
	ws := filepath.Join(home, "workspace")
	os.MkdirAll(filepath.Join(ws, "inbox"), 0o700)
	os.WriteFile(filepath.Join(ws, "inbox", "photo.jpg"), []byte("jpeg"), 0o600)
	os.WriteFile(filepath.Join(home, "env"), []byte("SECRET=1"), 0o600)
	os.Symlink(filepath.Join(home, "env"), filepath.Join(ws, "env-link"))
	os.Symlink("/etc/passwd", filepath.Join(ws, "passwd-link"))
	os.Symlink("inbox/photo.jpg", filepath.Join(ws, "inside-link"))
	in := &inbound.Inbound{Convs: loop.NewConvs(log, nil), Kick: loop.KickFunc(func(string) {}), Master: "master",
		Crew: loop.Agents{"master": {ID: "master", Workspace: ws}}, Clock: loop.WallClock{Zone: time.UTC}}
	srv := httptest.NewServer(web.New(web.Config{Log: log, Views: fakeViews{}, Inbound: in,
		Health: func(context.Context) (bool, any) { return true, nil }}))
	t.Cleanup(srv.Close)
	post := func(att ...string) (int, string) {
		b, _ := json.Marshal(map[string]any{"text": "look", "conversation_id": "", "attachments": att})
		resp, err := http.Post(srv.URL+"/api/inbound", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Error struct{ Code, Message string }
		}
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Error.Code + ": " + body.Error.Message
	}
	for _, bad := range []string{
		"../../etc/passwd", "/etc/passwd", filepath.Join(ws, "inbox", "photo.jpg"), "inbox/../../env",
		"env-link", "passwd-link", "inbox/missing.jpg", "inbox", "",
	} {
		code, msg := post("inbox/photo.jpg", bad)
		if code != http.StatusUnprocessableEntity || !strings.Contains(msg, "bad_attachment") {
			t.Errorf("attachment %q = %d %s, want 422 bad_attachment", bad, code, msg)
		}
		if quoted, _ := json.Marshal(bad); !strings.Contains(msg, strings.Trim(string(quoted), `"`)) {
			t.Errorf("attachment %q: the error does not name it: %s", bad, msg)
		}
	}
	if n, err := log.Last(t.Context(), events.Root+".>"); err != nil || n != 0 {
		t.Fatalf("refused messages stored: last seq %d, %v", n, err)
	}
	// A file in the workspace (also through a symlink that stays inside).
	if code, msg := post("inbox/photo.jpg", "inside-link"); code != http.StatusAccepted {
		t.Errorf("workspace files = %d %s, want 202", code, msg)
	}
	// Without a workspace, no attachments at all (fail closed).
	in.Crew = loop.Agents{"master": {ID: "master"}}
	if code, _ := post("inbox/photo.jpg"); code != http.StatusUnprocessableEntity {
		t.Errorf("no workspace configured = %d, want 422", code)
	}
}
