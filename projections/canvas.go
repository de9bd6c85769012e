package projections

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// Buckets of the canvas projection (R-CAN): the head of each canvas
// (events.CanvasRecord, versions without content), each version's content
// under <artifact>\x00<big-endian version>, the links conversation →
// canvases (<conversation>\x00<artifact>), each conversation's focus, and
// the store's total bytes of kept versions.
const (
	bucketCanvases      = "canvas_artifacts"
	bucketCanvasContent = "canvas_versions"
	bucketCanvasLinks   = "canvas_links"
	bucketCanvasFocus   = "canvas_focus"
	bucketCanvasTotal   = "canvas_total"
)

var totalKey = []byte("bytes")

// Canvas is one canvas's head as the projection keeps it.
type Canvas = events.CanvasRecord

// Focus is the canvas a conversation has open and the lines selected.
type Focus = events.CanvasFocused

// Canvases projects crew.canvas.<artifact> events and canvas_focused.
type Canvases struct{}

var _ Projection = Canvases{}

func (Canvases) Name() string { return "canvas" }

// Wants: a conversation's focus and the canvases' own events.
func (Canvases) Wants(kind, typ string) bool {
	return kind == "canvas" || kind == "conv" && typ == events.TypeCanvasFocused
}

func (Canvases) Buckets() []string {
	return []string{bucketCanvases, bucketCanvasContent, bucketCanvasLinks, bucketCanvasFocus, bucketCanvasTotal}
}

func (Canvases) Apply(tx *Tx, env events.Envelope) error {
	scope := events.ScopeOf(env.Subject)
	switch {
	case scope.Kind() == "conv" && env.Type == events.TypeCanvasFocused:
		return applyFocus(tx, scope.ID(), env)
	case scope.Kind() != "canvas":
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	id := scope.ID()
	heads := tx.Bucket([]byte(bucketCanvases))
	var rec *Canvas
	var cur Canvas
	if found, err := tx.getJSON(heads, []byte(id), &cur); err != nil {
		return err
	} else if found {
		rec = &cur
	}
	before := int64(0)
	if rec != nil {
		before = rec.Bytes
	}
	next, version := events.FoldCanvas(rec, id, env, e)
	if next == nil {
		return nil
	}
	content := tx.Bucket([]byte(bucketCanvasContent))
	switch e := e.(type) {
	case *events.ArtifactCreated:
		if version > 0 {
			if err := content.Put(versionKey(id, version), []byte(e.Content)); err != nil {
				return err
			}
		}
	case *events.ArtifactWritten:
		if version > 0 {
			if err := content.Put(versionKey(id, version), []byte(e.Content)); err != nil {
				return err
			}
		}
	case *events.ArtifactDeleted:
		if err := deletePrefix(content, []byte(id+"\x00")); err != nil {
			return err
		}
		for _, c := range next.Conversations {
			if err := tx.Bucket([]byte(bucketCanvasLinks)).Delete(linkKey(c, id)); err != nil {
				return err
			}
		}
	}
	if !next.Deleted {
		for _, c := range next.Conversations {
			if err := tx.Bucket([]byte(bucketCanvasLinks)).Put(linkKey(c, id), nil); err != nil {
				return err
			}
		}
	}
	if err := addTotal(tx, next.Bytes-before); err != nil {
		return err
	}
	return tx.putJSON(heads, []byte(id), next)
}

// applyFocus records a conversation's open canvas and links it.
func applyFocus(tx *Tx, conv string, env events.Envelope) error {
	e, err := env.Decode()
	if err != nil {
		return err
	}
	f := e.(*events.CanvasFocused)
	if err := tx.putJSON(tx.Bucket([]byte(bucketCanvasFocus)), []byte(conv), f); err != nil {
		return err
	}
	if f.Artifact == "" {
		return nil
	}
	heads := tx.Bucket([]byte(bucketCanvases))
	var rec Canvas
	if found, err := tx.getJSON(heads, []byte(f.Artifact), &rec); err != nil || !found || rec.Deleted || rec.Linked(conv) {
		return err
	}
	rec.Conversations = append(rec.Conversations, conv)
	if err := tx.Bucket([]byte(bucketCanvasLinks)).Put(linkKey(conv, f.Artifact), nil); err != nil {
		return err
	}
	return tx.putJSON(heads, []byte(f.Artifact), rec)
}

func versionKey(id string, version int) []byte {
	k := make([]byte, len(id)+1+4)
	copy(k, id)
	binary.BigEndian.PutUint32(k[len(id)+1:], uint32(version))
	return k
}

func linkKey(conv, id string) []byte { return []byte(conv + "\x00" + id) }

func deletePrefix(b *bbolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func addTotal(tx *Tx, delta int64) error {
	if delta == 0 {
		return nil
	}
	b := tx.Bucket([]byte(bucketCanvasTotal))
	var total int64
	if v := b.Get(totalKey); len(v) == 8 {
		total = int64(binary.BigEndian.Uint64(v))
	}
	return b.Put(totalKey, u64(uint64(max(total+delta, 0))))
}

// GetCanvas returns canvas id, or ErrNotFound (also once deleted).
func GetCanvas(db *bbolt.DB, id string) (Canvas, error) {
	c, err := get[Canvas](db, bucketCanvases, "canvas", id)
	if err == nil && c.Deleted {
		return Canvas{}, fmt.Errorf("get canvas %s: %w", id, ErrNotFound)
	}
	return c, err
}

// CanvasContent returns the content of one version of canvas id, or
// ErrNotFound.
func CanvasContent(db *bbolt.DB, id string, version int) (string, error) {
	var out string
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketCanvasContent))
		if b == nil {
			return ErrNotFound
		}
		v := b.Get(versionKey(id, version))
		if v == nil {
			return ErrNotFound
		}
		out = string(v)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("canvas %s v%d: %w", id, version, err)
	}
	return out, nil
}

// ListCanvases returns every canvas not deleted, the most recently
// changed first; q, when set, keeps those whose title contains it
// (case-insensitive).
func ListCanvases(db *bbolt.DB, q string) ([]Canvas, error) {
	var out []Canvas
	q = strings.ToLower(q)
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketCanvases))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var c Canvas
			if _, err := getJSON(b, k, &c); err != nil {
				return err
			}
			if !c.Deleted && (q == "" || strings.Contains(strings.ToLower(c.Title), q)) {
				out = append(out, c)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list canvases: %w", err)
	}
	slices.SortFunc(out, func(a, b Canvas) int {
		return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(b.LastSeq, a.LastSeq), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// LinkedCanvases returns the ids of the canvases linked to conversation,
// sorted.
func LinkedCanvases(db *bbolt.DB, conversation string) ([]string, error) {
	var out []string
	prefix := []byte(conversation + "\x00")
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketCanvasLinks))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			out = append(out, string(k[len(prefix):]))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("canvases of %s: %w", conversation, err)
	}
	return out, nil
}

// CanvasFocus returns the canvas conversation has open; ok false when it
// never opened one.
func CanvasFocus(db *bbolt.DB, conversation string) (f Focus, ok bool, err error) {
	err = db.View(func(tx *bbolt.Tx) error {
		ok, err = getJSON(tx.Bucket([]byte(bucketCanvasFocus)), []byte(conversation), &f)
		return err
	})
	if err != nil {
		return Focus{}, false, fmt.Errorf("canvas focus of %s: %w", conversation, err)
	}
	return f, ok, nil
}

// CanvasBytes is the total size of every canvas version kept.
func CanvasBytes(db *bbolt.DB) (int64, error) {
	var total int64
	err := db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte(bucketCanvasTotal)); b != nil {
			if v := b.Get(totalKey); len(v) == 8 {
				total = int64(binary.BigEndian.Uint64(v))
			}
		}
		return nil
	})
	return total, err
}

// CanvasStore reads the canvas projection of db; it is the canvas
// service's read model (tools/canvas.Store), which answers ErrNotFound
// as NotFound.
type CanvasStore struct {
	DB       *bbolt.DB
	NotFound error // returned (wrapping ErrNotFound) for a missing canvas
}

func (s CanvasStore) notFound(err error) error {
	if s.NotFound != nil && errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w (%w)", s.NotFound, err)
	}
	return err
}

func (s CanvasStore) Canvas(id string) (Canvas, error) {
	c, err := GetCanvas(s.DB, id)
	return c, s.notFound(err)
}

func (s CanvasStore) Content(id string, version int) (string, error) {
	text, err := CanvasContent(s.DB, id, version)
	return text, s.notFound(err)
}

func (s CanvasStore) List(q string) ([]Canvas, error) { return ListCanvases(s.DB, q) }

func (s CanvasStore) Linked(conversation string) ([]string, error) {
	return LinkedCanvases(s.DB, conversation)
}

func (s CanvasStore) Focus(conversation string) (Focus, bool, error) {
	return CanvasFocus(s.DB, conversation)
}

func (s CanvasStore) Bytes() (int64, error) { return CanvasBytes(s.DB) }
