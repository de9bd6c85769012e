package canvas

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
)

// Errors of the canvas rules; gateways/web maps each to one status.
var (
	ErrNotFound     = errors.New("no such canvas")                                // 404
	ErrBadKind      = errors.New("bad canvas kind")                               // 422
	ErrBadRequest   = errors.New("bad canvas request")                            // 400
	ErrTooLarge     = errors.New("canvas version too large")                      // 413
	ErrStoreFull    = errors.New("the canvas store is full")                      // 507
	ErrNotRendered  = errors.New("only html and mermaid canvases have a render")  // 404
	ErrNoSource     = errors.New("the canvas was not imported from a file")       // 409
	ErrSourceFailed = errors.New("the canvas's source file cannot be read")       // 409
	ErrUnavailable  = errors.New("canvases are not available in this process")    // 503
	errRetry        = errors.New("canvas changed meanwhile")                      // internal
	errUnchanged    = errors.New("the content is the same as the latest version") // internal
)

// StaleError refuses an owner's save whose base_version is not the latest
// (409): Diff shows what changed from that version to the latest.
type StaleError struct {
	Base, Latest int
	Diff         string
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("version %d is not the latest (%d): reload, or merge the diff", e.Base, e.Latest)
}

// MergeWindow: an owner's save replaces the latest version instead of
// adding one when that version is also the owner's, has no note, is
// younger than this and no conversation has seen it.
const MergeWindow = 120 * time.Second

// Store is the canvas read model (projections.Canvases, read through
// cmd/crew's adapter). Canvas answers ErrNotFound for a missing or deleted
// canvas.
type Store interface {
	Canvas(id string) (events.CanvasRecord, error)
	Content(id string, version int) (string, error)
	List(q string) ([]events.CanvasRecord, error)
	Linked(conversation string) ([]string, error)
	Focus(conversation string) (events.CanvasFocused, bool, error)
	Bytes() (int64, error)
}

// Freshness is projections.Freshness, which tools may not import: the
// read model's read-your-writes (the projections' Runner).
type Freshness interface {
	WaitFor(ctx context.Context, seq uint64) error
}

// Log is the part of events.Log the service writes through.
type Log interface {
	Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error)
	Last(ctx context.Context, filter string) (uint64, error)
}

// Service applies the canvas rules (R-CAN) for the tools and the REST
// API: it decides on the canvas's record in the read model and appends
// with that record's last sequence as expectation, so two writers never
// both win; the loser reads again (after the read model caught up) and
// decides again. It returns once the read model shows its write.
type Service struct {
	Store Store
	Log   Log
	// Fresh waits until the read model has applied a stream sequence;
	// nil: no waiting.
	Fresh Freshness
	// MaxBytes caps every version kept together (DefaultMaxBytes when 0).
	MaxBytes int64
	Master   string // the master agent reaches every canvas
	Clock    func() time.Time
	NewID    func() string

	// grow orders every write that adds bytes, from the store-wide cap's
	// check to the read model showing the write, so concurrent writes
	// cannot each pass the cap on a total without the other.
	grow sync.Mutex
}

func (s *Service) now() time.Time {
	if s == nil || s.Clock == nil {
		return time.Now()
	}
	return s.Clock()
}

func (s *Service) maxBytes() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return DefaultMaxBytes
}

func (s *Service) ready() error {
	if s == nil || s.Store == nil || s.Log == nil {
		return ErrUnavailable
	}
	return nil
}

// Get returns canvas id, or ErrNotFound.
func (s *Service) Get(id string) (events.CanvasRecord, error) {
	if err := s.ready(); err != nil {
		return events.CanvasRecord{}, err
	}
	if events.ValidID(id) != nil {
		return events.CanvasRecord{}, ErrNotFound
	}
	rec, err := s.Store.Canvas(id)
	if err != nil {
		if isNotFound(err) {
			return events.CanvasRecord{}, ErrNotFound
		}
		return events.CanvasRecord{}, err
	}
	return rec, nil
}

// Content returns version (0: the latest) of canvas id.
func (s *Service) Content(id string, version int) (events.CanvasRecord, events.CanvasVersion, string, error) {
	rec, err := s.Get(id)
	if err != nil {
		return rec, events.CanvasVersion{}, "", err
	}
	v, ok := versionOf(rec, version)
	if !ok {
		return rec, v, "", fmt.Errorf("%w: %s has versions 1 to %d", ErrBadRequest, id, rec.Latest().Version)
	}
	text, err := s.Store.Content(id, v.Version)
	if err != nil {
		return rec, v, "", err
	}
	return rec, v, text, nil
}

func versionOf(rec events.CanvasRecord, version int) (events.CanvasVersion, bool) {
	if version == 0 {
		return rec.Latest(), len(rec.Versions) > 0
	}
	for _, v := range rec.Versions {
		if v.Version == version {
			return v, true
		}
	}
	return events.CanvasVersion{}, false
}

// isNotFound: the read model's not-found, which Store gives as ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// Write is one write to a canvas: a create when Artifact is "".
type Write struct {
	Artifact string
	Title    string
	Kind     string
	Language string
	MIME     string // an image's
	Content  string
	Op       string
	Author   string // events.AuthorOwner or the agent
	// Conversation links the canvas to where it was written; RunID is the
	// agent's turn.
	Conversation, RunID string
	Note                string
	RestoredFrom        int
	Source              *events.ArtifactSource
	// Base is the version an owner's save was made on (0: not checked).
	Base int
}

func (w Write) owner() bool { return w.Author == events.AuthorOwner }

// Written is what a write did.
type Written struct {
	Record   events.CanvasRecord
	Version  int
	Changed  bool // false: the content was the latest's, no version made
	Replaced bool // the owner's save replaced the latest version
}

// Create makes a canvas with version 1.
func (s *Service) Create(ctx context.Context, w Write) (Written, error) {
	if err := s.ready(); err != nil {
		return Written{}, err
	}
	w.Title = strings.TrimSpace(w.Title)
	if w.Title == "" || len(w.Title) > 200 {
		return Written{}, fmt.Errorf("%w: a title of 1 to 200 characters is needed", ErrBadRequest)
	}
	if err := checkKind(w.Kind, w.Language); err != nil {
		return Written{}, err
	}
	s.grow.Lock()
	defer s.grow.Unlock()
	if err := s.checkContent(w.Kind, w.Content, w.owner(), 0); err != nil {
		return Written{}, err
	}
	id := w.Artifact
	if id == "" {
		id = s.NewID()
	}
	env, err := s.envelope(&events.ArtifactCreated{Title: w.Title, Kind: w.Kind, Language: w.Language, Content: w.Content, MIME: w.MIME,
		Author: w.Author, Conversation: w.Conversation, RunID: w.RunID, Note: w.Note, Source: w.Source})
	if err != nil {
		return Written{}, err
	}
	stored, err := s.Log.Append(ctx, events.Canvas(id), 0, env)
	if err != nil {
		return Written{}, fmt.Errorf("create canvas: %w", tooLarge(err, len(w.Content)))
	}
	if err := s.caughtUp(ctx, stored); err != nil {
		return Written{}, err
	}
	rec, err := s.Get(id)
	return Written{Record: rec, Version: 1, Changed: true}, err
}

// checkContent applies the per-version cap and the store-wide cap:
// agents stop at AgentShare of it, the owner at all of it. replaced is
// the size of a version the write replaces.
func (s *Service) checkContent(kind, content string, owner bool, replaced int) error {
	if err := checkSize(kind, content); err != nil {
		return err
	}
	total, err := s.Store.Bytes()
	if err != nil {
		return err
	}
	limit := s.maxBytes()
	if !owner {
		limit = int64(float64(limit) * AgentShare)
	}
	if total-int64(replaced)+int64(len(content)) > limit {
		if owner {
			return fmt.Errorf("%w: %d of %d bytes used; delete canvases or old ones to make room", ErrStoreFull, total, s.maxBytes())
		}
		return fmt.Errorf("%w: %d of %d bytes used, and agents stop at %d%%; nothing was written — tell the owner", ErrStoreFull, total, s.maxBytes(), int(AgentShare*100))
	}
	return nil
}

// Prepare decides a write on the canvas as it is: it returns the content
// to write given the latest version's, or refuses (an edit whose text is
// not there, a rewrite of a version not read whole).
type Prepare func(rec events.CanvasRecord, latest string) (content string, err error)

// Save adds a version to canvas w.Artifact (or, under the 120-second
// rule, replaces the owner's latest). Content equal to the latest makes
// no version. prepare, when set, makes the content from the latest
// version, and is asked again if the canvas changed before the write.
func (s *Service) Save(ctx context.Context, w Write, prepare Prepare) (Written, error) {
	if err := s.ready(); err != nil {
		return Written{}, err
	}
	for attempt := 0; ; attempt++ {
		out, err := s.save(ctx, w, prepare)
		if errors.Is(err, errRetry) && attempt < 5 {
			continue
		}
		return out, err
	}
}

func (s *Service) save(ctx context.Context, w Write, prepare Prepare) (Written, error) {
	s.grow.Lock()
	defer s.grow.Unlock()
	rec, err := s.Get(w.Artifact)
	if err != nil {
		return Written{}, err
	}
	last := rec.Latest()
	latest, err := s.Store.Content(rec.ID, last.Version)
	if err != nil {
		return Written{}, err
	}
	if prepare != nil {
		if w.Content, err = prepare(rec, latest); err != nil {
			return Written{Record: rec, Version: last.Version}, err
		}
	}
	if w.Base != 0 && w.Base != last.Version {
		base, err := s.Store.Content(rec.ID, w.Base)
		if err != nil {
			return Written{}, fmt.Errorf("%w: base_version %d: %s has versions 1 to %d", ErrBadRequest, w.Base, rec.ID, last.Version)
		}
		return Written{Record: rec, Version: last.Version}, &StaleError{Base: w.Base, Latest: last.Version, Diff: Diff(rec.Title, w.Base, last.Version, base, latest)}
	}
	if w.Content == latest && w.MIME == "" || w.Content == latest && w.MIME == rec.MIME {
		return Written{Record: rec, Version: last.Version}, nil
	}
	replace := w.owner() && w.Op == events.OpSave && s.mergeable(rec, last)
	replaced := 0
	if replace {
		replaced = last.Bytes
	}
	if err := s.checkContent(rec.Kind, w.Content, w.owner(), replaced); err != nil {
		return Written{Record: rec, Version: last.Version}, err
	}
	version := last.Version + 1
	if replace {
		version = last.Version
	}
	e := &events.ArtifactWritten{Version: version, Op: w.Op, Content: w.Content, MIME: w.MIME, Author: w.Author, Conversation: w.Conversation,
		RunID: w.RunID, Note: w.Note, RestoredFrom: w.RestoredFrom, Replaces: replace, Source: w.Source}
	if err := s.append(ctx, rec, e); err != nil {
		return Written{}, err
	}
	next, err := s.Get(rec.ID)
	return Written{Record: next, Version: version, Changed: true, Replaced: replace}, err
}

// mergeable: the owner's save may replace v, the latest version.
func (s *Service) mergeable(rec events.CanvasRecord, v events.CanvasVersion) bool {
	return v.Author == events.AuthorOwner && v.Note == "" && !v.Seen && (v.Op == events.OpSave || v.Op == events.OpCreate) &&
		s.now().Sub(v.Time) < MergeWindow
}

// append stores e on rec's canvas, expecting rec's last event; a conflict
// is errRetry once the read model shows what came in between.
func (s *Service) append(ctx context.Context, rec events.CanvasRecord, evs ...events.Event) error {
	envs := make([]events.Envelope, len(evs))
	for i, e := range evs {
		env, err := s.envelope(e)
		if err != nil {
			return err
		}
		envs[i] = env
	}
	stored, err := s.Log.Append(ctx, events.Canvas(rec.ID), rec.LastSeq, envs...)
	if errors.Is(err, events.ErrConflict) {
		last, lerr := s.Log.Last(ctx, events.Canvas(rec.ID).Filter())
		if lerr != nil {
			return lerr
		}
		if s.Fresh != nil {
			if werr := s.Fresh.WaitFor(ctx, last); werr != nil {
				return werr
			}
		}
		return errRetry
	}
	if err != nil {
		size := 0
		if w, ok := evs[len(evs)-1].(*events.ArtifactWritten); ok {
			size = len(w.Content)
		}
		return fmt.Errorf("canvas %s: %w", rec.ID, tooLarge(err, size))
	}
	return s.caughtUp(ctx, stored)
}

// tooLarge words the log's refusal of a version too large once encoded:
// a version under its kind's cap can still be, since JSON writes <, >, &
// and control characters as six bytes each. Nothing was stored.
func tooLarge(err error, size int) error {
	if !errors.Is(err, events.ErrTooLarge) {
		return err
	}
	return fmt.Errorf("%w: the version is %d bytes, but encoded for the event log (where <, >, & and control characters take six bytes each, quotes and backslashes two) it is over the log's limit (%v); nothing was written", ErrTooLarge, size, err)
}

// envelope wraps e at the service's clock, which the 120-second rule
// reads versions' times against.
func (s *Service) envelope(e events.Event) (events.Envelope, error) {
	env, err := events.New(e)
	if err != nil {
		return env, err
	}
	env.Time = s.now().UTC().Truncate(time.Microsecond)
	return env, nil
}

func (s *Service) caughtUp(ctx context.Context, stored []events.Envelope) error {
	if s.Fresh == nil || len(stored) == 0 {
		return nil
	}
	return s.Fresh.WaitFor(ctx, stored[len(stored)-1].Seq)
}

// Show returns version (0: the latest) of canvas id for conversation to
// see, first recording that it has when an owner's save could otherwise
// still replace that version (so what the conversation saw stays what it
// is).
func (s *Service) Show(ctx context.Context, conversation, id string, version int) (events.CanvasRecord, events.CanvasVersion, string, error) {
	for attempt := 0; ; attempt++ {
		rec, v, text, err := s.Content(id, version)
		if err != nil || conversation == "" || v.Version != rec.Latest().Version || !s.mergeable(rec, v) {
			return rec, v, text, err
		}
		err = s.append(ctx, rec, &events.ArtifactSeen{Version: v.Version, Conversation: conversation})
		if errors.Is(err, errRetry) && attempt < 5 {
			continue
		}
		return rec, v, text, err
	}
}

// Rename changes canvas id's title.
func (s *Service) Rename(ctx context.Context, id, title, author, conversation string, check func(rec events.CanvasRecord) error) (events.CanvasRecord, error) {
	title = strings.TrimSpace(title)
	if title == "" || len(title) > 200 {
		return events.CanvasRecord{}, fmt.Errorf("%w: a title of 1 to 200 characters is needed", ErrBadRequest)
	}
	for attempt := 0; ; attempt++ {
		rec, err := s.Get(id)
		if err != nil {
			return rec, err
		}
		if check != nil {
			if err := check(rec); err != nil {
				return rec, err
			}
		}
		if rec.Title == title {
			return rec, nil
		}
		err = s.append(ctx, rec, &events.ArtifactRenamed{Title: title, Author: author, Conversation: conversation})
		if errors.Is(err, errRetry) && attempt < 5 {
			continue
		}
		if err != nil {
			return rec, err
		}
		return s.Get(id)
	}
}

// Delete deletes canvas id and every version of it (the owner's, by REST).
func (s *Service) Delete(ctx context.Context, id string) error {
	for attempt := 0; ; attempt++ {
		rec, err := s.Get(id)
		if err != nil {
			return err
		}
		err = s.append(ctx, rec, &events.ArtifactDeleted{Author: events.AuthorOwner})
		if errors.Is(err, errRetry) && attempt < 5 {
			continue
		}
		return err
	}
}

// Restore copies version of canvas id as the newest (nothing deleted).
func (s *Service) Restore(ctx context.Context, id string, version int, author, conversation string) (Written, error) {
	_, v, text, err := s.Content(id, version)
	if err != nil {
		return Written{}, err
	}
	if version == 0 {
		return Written{}, fmt.Errorf("%w: name the version to restore", ErrBadRequest)
	}
	return s.Save(ctx, Write{Artifact: id, Content: text, Op: events.OpRestore, Author: author, Conversation: conversation,
		Note: fmt.Sprintf("restored from v%d", v.Version), RestoredFrom: v.Version}, nil)
}

// File is the latest version of canvas id as a file: a name from its title
// and its kind's extension, its media type and its bytes (an image's
// decoded) — for a download and for Telegram's "FILE: artifact:<id>".
func (s *Service) File(id string) (name, mime string, data []byte, err error) {
	rec, v, text, err := s.Content(id, 0)
	if err != nil {
		return "", "", nil, err
	}
	data = []byte(text)
	if rec.Kind == events.KindImage {
		if data, err = base64.StdEncoding.DecodeString(text); err != nil {
			return "", "", nil, fmt.Errorf("canvas %s v%d: stored image: %w", id, v.Version, err)
		}
	}
	return FileName(rec.Title) + Extension(rec.Kind, rec.Language, rec.MIME), ContentType(rec.Kind, rec.MIME), data, nil
}
