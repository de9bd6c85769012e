package inbound

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/my-agent-crew/crew/loop"
)

// Uploads (seed 000 §3 step 1, issue 16 item 4): an image the owner sends
// with a web message is stored under the agent's workspace/inbox/ before
// the message is, and the message names it as an attachment, exactly as
// a Telegram photo does; the turn cannot tell them apart.

// Upload limits.
const (
	// MaxUpload is the largest image one upload takes (10 MiB).
	MaxUpload = 10 << 20
	// MaxUploads bounds the images of one message.
	MaxUploads = 4
)

// ErrUploadTooLarge: an image over MaxUpload (413).
var ErrUploadTooLarge = errors.New("upload too large")

// Upload is one image sent with a message: the name the owner's device
// gave it (only a hint: the stored name is made from it) and its bytes.
type Upload struct {
	Name string
	Data []byte
}

// uploadTypes are the types an upload may be, sniffed from its bytes (never
// the name or a client's Content-Type), with the extension it is stored
// under. SVG (a script carrier) is no image here.
var uploadTypes = map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}

// SniffImage returns the type of an image upload's bytes, or an error
// saying what they look like instead.
func SniffImage(data []byte) (string, error) {
	ct := http.DetectContentType(data)
	if _, ok := uploadTypes[ct]; !ok {
		return "", fmt.Errorf("%w: the bytes are %s, not a PNG, JPEG, GIF or WebP image", ErrBadAttachment, ct)
	}
	return ct, nil
}

// checkUploads refuses, before anything is written, uploads that are too
// many, too large, empty or not images.
func checkUploads(ups []Upload, attached int) error {
	if len(ups) > MaxUploads {
		return fmt.Errorf("%w: %d images, at most %d per message", ErrBadAttachment, len(ups), MaxUploads)
	}
	if len(ups)+attached > MaxAttachments {
		return fmt.Errorf("%w: %d attachments, at most %d", ErrBadAttachment, len(ups)+attached, MaxAttachments)
	}
	for _, u := range ups {
		switch {
		case len(u.Data) > MaxUpload:
			return fmt.Errorf("%w: image %q is %d bytes, over the %d MiB limit", ErrUploadTooLarge, u.Name, len(u.Data), MaxUpload>>20)
		case len(u.Data) == 0:
			return fmt.Errorf("%w: image %q is empty", ErrBadAttachment, u.Name)
		}
		if _, err := SniffImage(u.Data); err != nil {
			return fmt.Errorf("image %q: %w", u.Name, err)
		}
	}
	return nil
}

// ownerOf is the agent a message goes to: the conversation's when it names
// one that exists, else the given agent.
func (in *Inbound) ownerOf(ctx context.Context, id, agent string) (string, error) {
	if id == "" {
		return agent, nil
	}
	conv, err := in.Convs.Get(ctx, id)
	if err != nil {
		return "", err
	}
	owner := ""
	conv.View(func(st *loop.State) { owner = st.Agent })
	if owner == "" {
		return agent, nil
	}
	return owner, nil
}

// saveUploads writes each upload to <workspace>/inbox/ under a new name
// (never over a file already there) and returns their workspace-relative
// paths; on an error nothing it wrote stays.
func (in *Inbound) saveUploads(agent string, ups []Upload) ([]string, error) {
	ws := in.workspace(agent)
	if ws == "" {
		return nil, fmt.Errorf("%w: this server takes no uploads for agent %s", ErrBadAttachment, agent)
	}
	root, err := OpenInbox(ws, true)
	if err != nil {
		return nil, fmt.Errorf("%w: the inbox of %s is not a folder inside its workspace, nothing was written: %v", ErrBadAttachment, agent, err)
	}
	defer root.Close()
	stamp := in.now().Format("20060102-150405")
	var rels []string
	for _, u := range ups {
		ct, _ := SniffImage(u.Data)
		name, err := writeNew(root, "web-"+stamp+"-"+SafeName(u.Name), uploadTypes[ct], u.Data)
		if err != nil {
			in.removeUploads(ws, rels)
			return nil, fmt.Errorf("storing image %q: %w", u.Name, err)
		}
		rels = append(rels, "inbox/"+name)
	}
	return rels, nil
}

// OpenInbox opens workspace ws's inbox/ (made when create is set) inside
// the workspace: an inbox/ the agent replaced by a symlink leading out of
// it (to another agent's folder, to the home) is refused, so the owner's
// uploads are never written, nor files served, outside the workspace.
func OpenInbox(ws string, create bool) (*os.Root, error) {
	wr, err := os.OpenRoot(ws)
	if err != nil {
		return nil, err
	}
	defer wr.Close()
	if create {
		if err := wr.Mkdir("inbox", 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, err
		}
	}
	return wr.OpenRoot("inbox")
}

// removeUploads deletes files saveUploads wrote for a message that was
// then not stored.
func (in *Inbound) removeUploads(ws string, rels []string) {
	for _, rel := range rels {
		os.Remove(filepath.Join(ws, filepath.FromSlash(rel)))
	}
}

// writeNew creates base+ext in root, or base-2+ext, base-3+ext, … when the
// name is taken (O_EXCL: an existing file is never overwritten), writes
// data and syncs it.
func writeNew(root *os.Root, base, ext string, data []byte) (string, error) {
	for n := 1; n <= 1000; n++ {
		name := base + ext
		if n > 1 {
			name = base + "-" + strconv.Itoa(n) + ext
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			root.Remove(name)
			return "", err
		}
		return name, nil
	}
	return "", errors.New("no free name in the inbox")
}

// SafeName turns an upload's name into a short file-name stem of letters,
// digits, '-' and '_': no folder (the part after the last / or \), no
// dots (so no ".." and no extension of the sender's choosing), at most 40
// characters; "image" when nothing is left.
func SafeName(name string) string {
	name = name[strings.LastIndexAny(name, `/\`)+1:]
	name = strings.TrimSuffix(name, path.Ext(name))
	var b strings.Builder
	dash := false
	for _, r := range name {
		ok := r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if s == "" {
		return "image"
	}
	return s
}
