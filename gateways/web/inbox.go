package web

import (
	"io"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools/image"
	"github.com/my-agent-crew/crew/ui"
)

// The images the owner sent (web uploads, Telegram photos) show in the
// chat as thumbnails from /c/{id}/inbox/{name}: only a file of the
// agent's workspace/inbox/ that a message of that conversation names, only
// when its bytes are a PNG, JPEG, GIF or WebP image (never SVG or HTML),
// with that type and nosniff.

// inboxName is a file name directly in inbox/.
var inboxName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// attachmentViews splits a message's attachments into the images the chat
// shows (served from the conversation's inbox route) and the other files,
// named.
func attachmentViews(conv string, paths []string) (imgs []ui.Attached, files []string) {
	for _, p := range paths {
		name, inInbox := strings.CutPrefix(p, "inbox/")
		if inInbox && inboxName.MatchString(name) && image.IsImage(name) {
			imgs = append(imgs, ui.Attached{URL: "/c/" + conv + "/inbox/" + name, Name: p})
			continue
		}
		files = append(files, p)
	}
	return imgs, files
}

// inboxImage serves one image attached to a message of the conversation.
func (s *server) inboxImage(w http.ResponseWriter, r *http.Request) {
	id, name := r.PathValue("id"), r.PathValue("name")
	p := s.cfg.Pages
	if events.ValidID(id) != nil || !inboxName.MatchString(name) || p == nil || p.DB == nil || p.Crew == nil {
		http.NotFound(w, r)
		return
	}
	p.caughtUpOn(r.Context(), id)
	c, err := projections.GetConversation(p.DB, id)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	chat, items, err := projections.GetChat(p.DB, id)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	rel := "inbox/" + name
	agent, attached := c.Agent, false
	for _, it := range items {
		attached = attached || slices.Contains(it.Attachments, rel)
	}
	for _, q := range chat.Queued {
		attached = attached || slices.Contains(q.Item.Attachments, rel)
	}
	a, _ := p.Crew.Agent(agent)
	ws := a.Workspace
	if !attached || ws == "" {
		http.NotFound(w, r)
		return
	}
	root, err := inbound.OpenInbox(ws, false)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer root.Close()
	f, fi, ok := s.openRegular(w, r, root, "inbox image", id, name)
	if !ok {
		return
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	ct, err := inbound.SniffImage(head[:n])
	if err != nil {
		http.Error(w, "not an image", http.StatusUnsupportedMediaType)
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Disposition", "inline; filename=\""+path.Base(name)+"\"")
	serveInert(w, r, ct, f, fi)
}
