package events

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Canvas events (R-CAN, seed 000 §2.8). A canvas is a versioned document
// beside conversations; every change is an event on crew.canvas.<artifact>,
// and CanvasFocused (which canvas a conversation has open) on the
// conversation. Version content travels in the event: the log is the truth.
const (
	TypeArtifactCreated = "artifact_created"
	TypeArtifactWritten = "artifact_written"
	TypeArtifactRenamed = "artifact_renamed"
	TypeArtifactDeleted = "artifact_deleted"
	TypeArtifactSeen    = "artifact_seen"
	TypeCanvasFocused   = "canvas_focused"
)

func init() {
	register[ArtifactCreated]()
	register[ArtifactWritten]()
	register[ArtifactRenamed]()
	register[ArtifactDeleted]()
	register[ArtifactSeen]()
	register[CanvasFocused]()
}

// AuthorOwner is the author of every write made through the REST API.
const AuthorOwner = "owner"

// Canvas kinds.
const (
	KindMarkdown = "markdown"
	KindCode     = "code"
	KindMermaid  = "mermaid"
	KindHTML     = "html"
	KindSVG      = "svg"
	KindImage    = "image"
)

// Canvas write operations (ArtifactWritten.Op and the version history).
const (
	OpCreate  = "create"
	OpSave    = "save"    // the owner's save (REST)
	OpEdit    = "edit"    // artifact_edit
	OpRewrite = "rewrite" // artifact_rewrite
	OpImport  = "import"  // artifact_import or a reimport of the source file
	OpRestore = "restore" // an old version copied as the newest
)

// ArtifactSource is the workspace file a canvas was imported from.
type ArtifactSource struct {
	Agent  string `json:"agent"`  // whose workspace
	Path   string `json:"path"`   // workspace-relative
	Digest string `json:"digest"` // sha256 hex of the bytes imported
}

// ArtifactCreated is a new canvas with its version 1.
type ArtifactCreated struct {
	Title    string `json:"title"`
	Kind     string `json:"kind"`
	Language string `json:"language,omitempty"` // code only
	// Content is the text; an image's bytes in standard base64 with MIME.
	Content string `json:"content"`
	MIME    string `json:"mime,omitempty"`
	Author  string `json:"author"` // AuthorOwner or an agent id
	// Conversation is where it was made (linked to it); RunID the turn.
	Conversation string          `json:"conversation,omitempty"`
	RunID        string          `json:"run_id,omitempty"`
	Note         string          `json:"note,omitempty"`
	Source       *ArtifactSource `json:"source,omitempty"`
}

func (*ArtifactCreated) EventType() string { return TypeArtifactCreated }
func (*ArtifactCreated) EventVersion() int { return 1 }

// ArtifactWritten is a new version of a canvas (or, Replaces, the owner's
// save that replaces the latest version under the 120-second rule).
type ArtifactWritten struct {
	Version      int             `json:"version"`
	Op           string          `json:"op"`
	Content      string          `json:"content"`
	MIME         string          `json:"mime,omitempty"`
	Author       string          `json:"author"`
	Conversation string          `json:"conversation,omitempty"`
	RunID        string          `json:"run_id,omitempty"`
	Note         string          `json:"note,omitempty"` // "restored from v3", "imported from file"
	RestoredFrom int             `json:"restored_from,omitempty"`
	Replaces     bool            `json:"replaces,omitempty"`
	Source       *ArtifactSource `json:"source,omitempty"` // an import: the file read
}

func (*ArtifactWritten) EventType() string { return TypeArtifactWritten }
func (*ArtifactWritten) EventVersion() int { return 1 }

// ArtifactRenamed changes a canvas's title.
type ArtifactRenamed struct {
	Title        string `json:"title"`
	Author       string `json:"author"`
	Conversation string `json:"conversation,omitempty"`
}

func (*ArtifactRenamed) EventType() string { return TypeArtifactRenamed }
func (*ArtifactRenamed) EventVersion() int { return 1 }

// ArtifactDeleted deletes a canvas and every version of it.
type ArtifactDeleted struct {
	Author string `json:"author"`
}

func (*ArtifactDeleted) EventType() string { return TypeArtifactDeleted }
func (*ArtifactDeleted) EventVersion() int { return 1 }

// ArtifactSeen records, before a conversation is shown a version, that it
// has been: from then on an owner's save no longer replaces that version
// (the 120-second rule). Appended only while the version could still be
// replaced.
type ArtifactSeen struct {
	Version      int    `json:"version"`
	Conversation string `json:"conversation"`
}

func (*ArtifactSeen) EventType() string { return TypeArtifactSeen }
func (*ArtifactSeen) EventVersion() int { return 1 }

// CanvasFocused is the canvas a conversation has open in the web panel
// and the lines selected there (none: Artifact ""). Stored on the
// conversation; opening a canvas links it to the conversation.
type CanvasFocused struct {
	Artifact string `json:"artifact,omitempty"`
	FromLine int    `json:"from_line,omitempty"` // 1-based, inclusive
	ToLine   int    `json:"to_line,omitempty"`
}

func (*CanvasFocused) EventType() string { return TypeCanvasFocused }
func (*CanvasFocused) EventVersion() int { return 1 }

// CanvasRef is what a canvas tool's result says of the canvas it touched,
// recorded with the result (ToolCompleted.Canvas) so the conversation's
// state knows what it has seen and written, and the chat shows a card.
type CanvasRef struct {
	Artifact string `json:"artifact"`
	Title    string `json:"title,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Version  int    `json:"version"`
	// Op is the write the call made (OpCreate, OpEdit, …); "" for a read.
	Op string `json:"op,omitempty"`
	// Whole: the agent now knows this version's whole content (it read it
	// all, or wrote it on top of the version it knew whole).
	Whole bool `json:"whole,omitempty"`
}

// CanvasNotes travel with a turn-opening message (R-CTX-3): what changed
// in the conversation's canvases since it last saw or was told of them.
type CanvasNotes struct {
	Text string       `json:"text"`
	Told []CanvasTold `json:"told,omitempty"`
}

// CanvasTold is what a note told of one canvas: the version it reached,
// and whether the conversation now knows that version whole (a diff from
// the version it knew whole showing every change).
type CanvasTold struct {
	Artifact string `json:"artifact"`
	Version  int    `json:"version"`
	Whole    bool   `json:"whole,omitempty"`
}

// CanvasVersion is one version of a canvas as the history lists it.
type CanvasVersion struct {
	Version      int       `json:"version"`
	Op           string    `json:"op"`
	Author       string    `json:"author"`
	Time         time.Time `json:"time"`
	Note         string    `json:"note,omitempty"`
	Bytes        int       `json:"bytes"`
	Digest       string    `json:"digest"`
	Conversation string    `json:"conversation,omitempty"`
	RestoredFrom int       `json:"restored_from,omitempty"`
	// Seen: some conversation has been shown this version.
	Seen bool `json:"seen,omitempty"`
}

// CanvasRecord is a canvas's head: title, kind, every version's metadata
// (content is kept apart), links and the import source. The canvas
// projection stores it and the canvas rules decide on it; both fold it
// with FoldCanvas.
type CanvasRecord struct {
	ID       string          `json:"id"`
	Title    string          `json:"title"`
	Kind     string          `json:"kind"`
	Language string          `json:"language,omitempty"`
	MIME     string          `json:"mime,omitempty"`
	Author   string          `json:"author"`
	Created  time.Time       `json:"created"`
	Updated  time.Time       `json:"updated"`
	Versions []CanvasVersion `json:"versions"`
	// Conversations linked to it, in the order they were.
	Conversations []string        `json:"conversations,omitempty"`
	Source        *ArtifactSource `json:"source,omitempty"`
	Deleted       bool            `json:"deleted,omitempty"`
	// Bytes sums the content of every version kept.
	Bytes   int64  `json:"bytes"`
	LastSeq uint64 `json:"last_seq"`
}

// Latest is the newest version's metadata.
func (r *CanvasRecord) Latest() CanvasVersion {
	if len(r.Versions) == 0 {
		return CanvasVersion{}
	}
	return r.Versions[len(r.Versions)-1]
}

// Linked reports whether conversation is linked to the canvas.
func (r *CanvasRecord) Linked(conversation string) bool {
	for _, c := range r.Conversations {
		if c == conversation {
			return true
		}
	}
	return false
}

func (r *CanvasRecord) link(conversation string) {
	if conversation != "" && !r.Linked(conversation) {
		r.Conversations = append(r.Conversations, conversation)
	}
}

// ContentDigest is the sha256 hex of a version's content as stored.
func ContentDigest(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// FoldCanvas applies e, decoded from env, to rec (nil: no such canvas
// yet). It returns the record to keep and, when e stored content, the
// version whose content it is (0 otherwise). A deleted canvas takes no
// more events; a second create of an id is ignored.
func FoldCanvas(rec *CanvasRecord, id string, env Envelope, e Event) (next *CanvasRecord, stored int) {
	if rec != nil && rec.Deleted {
		return rec, 0
	}
	t := env.Time
	switch e := e.(type) {
	case *ArtifactCreated:
		if rec != nil {
			return rec, 0
		}
		r := &CanvasRecord{ID: id, Title: e.Title, Kind: e.Kind, Language: e.Language, MIME: e.MIME, Author: e.Author,
			Created: t, Updated: t, Source: e.Source, Bytes: int64(len(e.Content)), LastSeq: env.Seq,
			Versions: []CanvasVersion{{Version: 1, Op: OpCreate, Author: e.Author, Time: t, Note: e.Note,
				Bytes: len(e.Content), Digest: ContentDigest(e.Content), Conversation: e.Conversation}}}
		r.link(e.Conversation)
		return r, 1
	case *ArtifactWritten:
		if rec == nil {
			return nil, 0
		}
		v := CanvasVersion{Version: e.Version, Op: e.Op, Author: e.Author, Time: t, Note: e.Note, Bytes: len(e.Content),
			Digest: ContentDigest(e.Content), Conversation: e.Conversation, RestoredFrom: e.RestoredFrom}
		last := rec.Latest()
		switch {
		case e.Replaces && e.Version == last.Version:
			rec.Bytes += int64(v.Bytes - last.Bytes)
			rec.Versions[len(rec.Versions)-1] = v
		case e.Version == last.Version+1:
			rec.Bytes += int64(v.Bytes)
			rec.Versions = append(rec.Versions, v)
		default:
			return rec, 0 // out of order: the writer checks, so never stored
		}
		if e.MIME != "" {
			rec.MIME = e.MIME
		}
		if e.Source != nil {
			rec.Source = e.Source
		}
		rec.link(e.Conversation)
		rec.Updated, rec.LastSeq = t, env.Seq
		return rec, e.Version
	case *ArtifactRenamed:
		if rec == nil {
			return nil, 0
		}
		rec.Title, rec.Updated, rec.LastSeq = e.Title, t, env.Seq
		rec.link(e.Conversation)
		return rec, 0
	case *ArtifactSeen:
		if rec == nil {
			return nil, 0
		}
		for i := range rec.Versions {
			if rec.Versions[i].Version == e.Version {
				rec.Versions[i].Seen = true
			}
		}
		rec.LastSeq = env.Seq
		return rec, 0
	case *ArtifactDeleted:
		if rec == nil {
			return nil, 0
		}
		rec.Deleted, rec.Updated, rec.LastSeq = true, t, env.Seq
		rec.Bytes = 0
		return rec, 0
	}
	return rec, 0
}
