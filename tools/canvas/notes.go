package canvas

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/my-agent-crew/crew/events"
)

// Caps of the canvas notes (R-CTX-3, seed 000 §6).
const (
	NoteDiffs     = 3     // canvases told by a diff, newest first
	NoteDiffChars = 3_000 // each diff
	NoteChars     = 8_000 // the whole note
	// NoteSelectionChars bounds the selected lines a web message carries.
	NoteSelectionChars = 2_000
)

// Mark is what a conversation knows of a canvas: the newest version it
// knows whole, and the newest it was told of.
type Mark struct{ Seen, Told int }

// NotesFor is a turn-opening message about to be stored.
type NotesFor struct {
	Conversation string
	Agent        string
	// Web: a web chat message, which also carries the open canvas and the
	// selected lines (only there does the owner see a canvas).
	Web   bool
	Marks map[string]Mark
}

// candidate is one canvas with something to tell.
type candidate struct {
	rec   events.CanvasRecord
	mark  Mark
	block string // what to tell; "" while undecided
	told  events.CanvasTold
	diff  bool
}

// Notes composes the canvas notes of a turn-opening message: for each
// canvas linked to the conversation (or known to it), compared with the
// version it last saw whole — unseen: one line; the owner's edits: a
// unified diff (at most NoteDiffs canvases, newest first, each at most
// NoteDiffChars, the whole note at most NoteChars); another agent's
// version, a restore, or a change too long to show: one line asking to
// read it again; what does not fit is counted on a last line. A web
// message also carries the open canvas and the selected lines. nil when
// there is nothing to tell.
//
// A version a note tells of is marked seen (artifact_seen) before the
// message is stored, so an owner's save cannot replace it afterwards.
func (s *Service) Notes(ctx context.Context, in NotesFor) (*events.CanvasNotes, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	ids, err := s.Store.Linked(in.Conversation)
	if err != nil {
		return nil, err
	}
	for id := range in.Marks {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	var cands []*candidate
	for _, id := range ids {
		rec, err := s.Get(id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		m := in.Marks[id]
		if last := rec.Latest().Version; m.Told >= last || m.Seen >= last {
			continue
		}
		cands = append(cands, &candidate{rec: rec, mark: m})
	}
	// Newest change first.
	slices.SortFunc(cands, func(a, b *candidate) int {
		return cmp.Or(b.rec.Latest().Time.Compare(a.rec.Latest().Time), strings.Compare(a.rec.ID, b.rec.ID))
	})
	var blocks []string
	var told []events.CanvasTold
	used := 0
	if in.Web {
		if open := s.openCanvas(in.Conversation); open != "" {
			blocks = append(blocks, open)
			used += len(open)
		}
	}
	diffs, rest := 0, 0
	for _, c := range cands {
		if err := s.decide(in, c, diffs < NoteDiffs); err != nil {
			return nil, err
		}
		if used+len(c.block)+2 > NoteChars {
			rest++
			c.told.Whole = false
			told = append(told, c.told)
			continue
		}
		if c.diff {
			diffs++
		}
		blocks = append(blocks, c.block)
		told = append(told, c.told)
		used += len(c.block) + 2
	}
	if rest > 0 {
		blocks = append(blocks, fmt.Sprintf("%d more canvas(es) changed; artifact_list shows them.", rest))
	}
	if len(blocks) == 0 {
		return nil, nil
	}
	// Told of a version, by a diff or a line, the conversation has seen it:
	// an owner's save no longer replaces it.
	for _, t := range told {
		if _, _, _, err := s.Show(ctx, in.Conversation, t.Artifact, t.Version); err != nil {
			return nil, err
		}
	}
	return &events.CanvasNotes{Text: strings.Join(blocks, "\n\n"), Told: told}, nil
}

// decide fills in what to tell of c; diffOK: a diff may still be told.
func (s *Service) decide(in NotesFor, c *candidate, diffOK bool) error {
	rec, m := c.rec, c.mark
	last := rec.Latest()
	name := fmt.Sprintf("Canvas %q (%s, %s)", rec.Title, rec.ID, kindName(rec))
	c.told = events.CanvasTold{Artifact: rec.ID, Version: last.Version}
	if m.Seen == 0 && m.Told == 0 {
		c.block = fmt.Sprintf("%s, version %d: you have not read it; artifact_read shows it.", name, last.Version)
		return nil
	}
	var why string
	for _, v := range rec.Versions {
		if v.Version <= m.Seen {
			continue
		}
		switch {
		case v.Op == events.OpRestore:
			why = fmt.Sprintf("version %d restores version %d", v.Version, v.RestoredFrom)
		case v.Author != events.AuthorOwner && v.Conversation != in.Conversation:
			why = fmt.Sprintf("version %d is by %s", v.Version, v.Author)
		}
	}
	again := fmt.Sprintf("%s changed to version %d (%%s); read it again with artifact_read before you rewrite it.", name, last.Version)
	switch {
	case why != "":
		c.block = fmt.Sprintf(again, why)
		return nil
	case m.Seen == 0:
		c.block = fmt.Sprintf(again, "the owner edited it, and you have not read it whole")
		return nil
	case rec.Kind == events.KindImage:
		c.block = fmt.Sprintf(again, "a new image")
		return nil
	case !diffOK:
		c.block = fmt.Sprintf(again, "the owner edited it")
		return nil
	}
	old, err := s.Store.Content(rec.ID, m.Seen)
	if err != nil {
		return err
	}
	now, err := s.Store.Content(rec.ID, last.Version)
	if err != nil {
		return err
	}
	diff := Diff(rec.Title, m.Seen, last.Version, old, now)
	if len(diff) > NoteDiffChars {
		c.block = fmt.Sprintf(again, "the owner's change is too long to show")
		return nil
	}
	c.block = fmt.Sprintf("%s: the owner edited it from version %d, which you read, to version %d:\n%s", name, m.Seen, last.Version, strings.TrimRight(diff, "\n"))
	c.told.Whole, c.diff = true, true
	return nil
}

// openCanvas is what a web message says of the canvas open beside the
// chat: which one, and the lines the owner selected.
func (s *Service) openCanvas(conversation string) string {
	f, ok, err := s.Store.Focus(conversation)
	if err != nil || !ok || f.Artifact == "" {
		return ""
	}
	rec, _, text, err := s.Content(f.Artifact, 0)
	if err != nil {
		return ""
	}
	out := fmt.Sprintf("The owner has canvas %q (%s, version %d) open beside the chat.", rec.Title, rec.ID, rec.Latest().Version)
	if f.FromLine == 0 || rec.Kind == events.KindImage {
		return out
	}
	all := lines(text)
	from, to := min(f.FromLine, len(all)), min(f.ToLine, len(all))
	if from < 1 || to < from {
		return out
	}
	sel := strings.Join(all[from-1:to], "\n")
	if len(sel) > NoteSelectionChars {
		cut := NoteSelectionChars
		for cut > 0 && !utf8.RuneStart(sel[cut]) {
			cut--
		}
		sel = sel[:cut] + "…"
	}
	return out + fmt.Sprintf(" Selected, lines %d-%d:\n%s", from, to, sel)
}
