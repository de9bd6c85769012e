package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/ui"
)

// resultPage is what a tool card shows of the web page a result came from
// (fetch_url, browser_*): its meta's title and URL, its images as URLs of
// the parts route, and whether its output holds an outline. nil for a
// result with neither a page nor an image.
func resultPage(conv string, raw json.RawMessage, parts []events.ToolPart) *ui.ToolPage {
	var meta struct {
		URL     string `json:"url"`
		Title   string `json:"title"`
		Outline bool   `json:"outline"`
	}
	if len(raw) > 0 {
		json.Unmarshal(raw, &meta)
	}
	p := &ui.ToolPage{Title: meta.Title, URL: meta.URL, Outline: meta.Outline}
	prefix := "spill/" + conv + "/"
	for _, part := range parts {
		if part.Kind == "image" && strings.HasPrefix(part.Path, prefix) && partName.MatchString(path.Base(part.Path)) {
			p.Images = append(p.Images, "/c/"+conv+"/parts/"+path.Base(part.Path))
		}
	}
	if p.URL == "" && len(p.Images) == 0 {
		return nil
	}
	return p
}

// partName is an image a tool result kept under spill/<conversation>/.
var partName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.(png|jpg|gif|webp)$`)

var partTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}

// Spills are where a conversation's kept images are read (tools.Spills).
type Spills interface {
	Get(ctx context.Context, conv, name string) ([]byte, error)
}

// part serves one image of a conversation's tool results, from its
// spills only.
func (s *server) part(w http.ResponseWriter, r *http.Request) {
	id, name := r.PathValue("id"), r.PathValue("name")
	if events.ValidID(id) != nil || !partName.MatchString(name) || s.cfg.Pages == nil || s.cfg.Pages.Spills == nil && s.cfg.Pages.Home == "" {
		http.NotFound(w, r)
		return
	}
	spills := s.cfg.Pages.Spills
	if spills == nil {
		spills = tools.SpillDir(filepath.Join(s.cfg.Pages.Home, "spill"))
	}
	data, err := spills.Get(r.Context(), id, name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.logger().Error("part", "conversation", id, "name", name, "err", err)
		}
		http.NotFound(w, r)
		return
	}
	setInert(w, partTypes[path.Ext(name)])
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// openRegular opens name under root for a conversation's file route: a
// regular file, or a 404 (and a log line for an error other than absence).
func (s *server) openRegular(w http.ResponseWriter, r *http.Request, root *os.Root, what, id, name string) (*os.File, fs.FileInfo, bool) {
	f, err := root.Open(name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.logger().Error(what, "conversation", id, "name", name, "err", err)
		}
		http.NotFound(w, r)
		return nil, nil, false
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		http.NotFound(w, r)
		return nil, nil, false
	}
	return f, fi, true
}

// serveInert serves f as content type ct that the browser may neither
// sniff into another type nor run anything in.
func serveInert(w http.ResponseWriter, r *http.Request, ct string, f *os.File, fi fs.FileInfo) {
	setInert(w, ct)
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// setInert sets the headers that make a served file inert: its type, no
// sniffing, no scripts, cached privately.
func setInert(w http.ResponseWriter, ct string) {
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	w.Header().Set("Cache-Control", "private, max-age=3600")
}
