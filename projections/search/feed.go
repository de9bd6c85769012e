package search

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/my-agent-crew/crew/events"
)

// Internal keys of the index's own storage.
const (
	keyCheckpoint = "checkpoint"
	keyVersion    = "version"
	prefixConv    = "c/"    // conversation → convMeta
	prefixCall    = "call/" // conversation/call id → pending memory write
	prefixProp    = "prop/" // proposal id → proposal
	prefixWiki    = "wiki/" // page → folded text
	prefixFact    = "fact/" // name → folded text
	prefixCanvas  = "canv/" // canvas id → canvasMeta
)

// indexVersion changes when documents or the mapping change shape: Open
// starts an index written at another version (or none) again, and the
// feeder indexes the log from the start. 2: only queried fields indexed.
const indexVersion = 2

// wanted is every event type the feed reads; the others only move the
// checkpoint, undecoded.
var wanted = map[string]bool{
	events.TypeConversationOpened:     true,
	events.TypeMessageReceived:        true,
	events.TypeModelCalled:            true,
	events.TypeConversationSummarized: true,
	events.TypeToolCalled:             true,
	events.TypeToolCompleted:          true,
	events.TypeMemoryProposed:         true,
	events.TypeMemoryProposalDecided:  true,
	events.TypeMemoryRolledBack:       true,
	events.TypeArtifactCreated:        true,
	events.TypeArtifactWritten:        true,
	events.TypeArtifactRenamed:        true,
	events.TypeArtifactDeleted:        true,
}

// Wants reports whether the feed reads events of type typ.
func Wants(typ string) bool { return wanted[typ] }

// memoryTools are the writes the feed follows from their call to their
// result.
var memoryTools = map[string]bool{"memory_save": true, "user_memory_save": true, "user_memory_forget": true, "wiki_apply": true}

type convMeta struct {
	Agent   string `json:"agent"`
	Channel string `json:"channel"`
	Day     string `json:"day,omitempty"`
	Root    string `json:"root,omitempty"` // delegation root, or the team's lead conversation
	Title   string `json:"title,omitempty"`
}

type pendingCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

type proposal struct {
	Agent string `json:"agent"`
	File  string `json:"file,omitempty"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

type canvasMeta struct {
	Title   string   `json:"title"`
	Kind    string   `json:"kind"`
	Author  string   `json:"author"`
	Convs   []string `json:"convs,omitempty"`
	Version int      `json:"version"`
	Content string   `json:"content"`
	Subject string   `json:"subject"`
	Seq     uint64   `json:"seq"`
	At      string   `json:"at"`
	// Olds are the older versions with a document of their own.
	Olds []int `json:"olds,omitempty"`
}

// batch is one bleve batch with the internal state it changes, read
// through (a later event of the batch sees an earlier one's state).
type batch struct {
	x       *Index
	b       *bleve.Batch
	state   map[string][]byte // nil value: deleted
	redact  func(string) string
	indexed []string // document ids (re)indexed, for the embedder
	deleted []string
}

func (x *Index) newBatch(redact func(string) string) *batch {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &batch{x: x, b: x.idx.NewBatch(), state: map[string][]byte{}, redact: redact}
}

func (b *batch) get(key string, v any) (bool, error) {
	raw, ok := b.state[key]
	if !ok {
		var err error
		if raw, err = b.x.idx.GetInternal([]byte(key)); err != nil {
			return false, err
		}
	}
	if raw == nil {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

func (b *batch) put(key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.state[key] = raw
	b.b.SetInternal([]byte(key), raw)
	return nil
}

func (b *batch) del(key string) {
	b.state[key] = nil
	b.b.DeleteInternal([]byte(key))
}

func (b *batch) index(id string, d Doc) error {
	d.Text = b.redact(d.Text)
	d.Title = b.redact(d.Title)
	if strings.TrimSpace(d.Text) == "" && strings.TrimSpace(d.Title) == "" {
		b.remove(id)
		return nil
	}
	if err := b.b.Index(id, d); err != nil {
		return fmt.Errorf("index %s: %w", id, err)
	}
	b.indexed = append(b.indexed, id)
	return nil
}

func (b *batch) remove(id string) {
	b.b.Delete(id)
	b.deleted = append(b.deleted, id)
}

// commit writes the batch with checkpoint seq.
func (b *batch) commit(seq uint64) error {
	b.b.SetInternal([]byte(keyCheckpoint), u64(seq))
	if err := b.x.idx.Batch(b.b); err != nil {
		return fmt.Errorf("search index: batch up to seq %d: %w", seq, err)
	}
	return nil
}

// Checkpoint is the stream sequence the index has applied up to.
func (x *Index) Checkpoint() (uint64, error) {
	v, err := x.idx.GetInternal([]byte(keyCheckpoint))
	if err != nil || len(v) != 8 {
		return 0, err
	}
	return binary.BigEndian.Uint64(v), nil
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// apply folds one event into the batch. It uses only the event, never the
// clock, so a rebuild indexes the same documents.
func (b *batch) apply(env events.Envelope) error {
	if !wanted[env.Type] {
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	scope := events.ScopeOf(env.Subject)
	id := scope.ID()
	at := env.Time.UTC().Format(time.RFC3339Nano)
	switch e := e.(type) {
	case *events.ConversationOpened:
		m := convMeta{Agent: e.Agent, Channel: e.Channel, Day: e.Day, Root: e.RootID, Title: e.Title}
		if e.Team != "" && m.Root == "" {
			m.Root = e.Team
		}
		return b.put(prefixConv+id, m)
	case *events.MessageReceived:
		if e.Team != nil {
			return nil // team mail is not the owner's words
		}
		return b.convDoc(KindMessage, "m:"+seqID(env.Seq), id, env, e.Text, "", 0, at)
	case *events.ModelCalled:
		if !e.InTurn() || e.Text == "" || len(e.ToolCalls) > 0 || e.Error != "" {
			return nil
		}
		return b.convDoc(KindReply, "r:"+seqID(env.Seq), id, env, e.Text, e.RunID, e.Step, at)
	case *events.ConversationSummarized:
		return b.convDoc(KindSummary, "s:"+id, id, env, e.Summary, "", 0, at)
	case *events.ToolCalled:
		if !memoryTools[e.Tool] {
			return nil
		}
		return b.put(prefixCall+id+"/"+e.CallID, pendingCall{Tool: e.Tool, Args: e.Arguments})
	case *events.ToolCompleted:
		return b.memoryWrite(id, env, e, at)
	case *events.MemoryProposed:
		return b.put(prefixProp+e.ProposalID, proposal{Agent: e.Agent, File: e.File, Old: e.Old, New: e.New})
	case *events.MemoryProposalDecided:
		if e.Decision != events.ProposalApproved && e.Decision != events.ProposalAutoApplied {
			return nil
		}
		return b.memoryFile(e.ProposalID, env, at, false)
	case *events.MemoryRolledBack:
		return b.memoryFile(e.ProposalID, env, at, true)
	case *events.ArtifactCreated, *events.ArtifactWritten, *events.ArtifactRenamed, *events.ArtifactDeleted:
		return b.canvas(id, env, e, at)
	}
	return nil
}

func seqID(seq uint64) string { return strconv.FormatUint(seq, 10) }

// convDoc indexes a conversation's text.
func (b *batch) convDoc(kind, docID, conv string, env events.Envelope, text, run string, step int, at string) error {
	var m convMeta
	if _, err := b.get(prefixConv+conv, &m); err != nil {
		return err
	}
	day := m.Day
	if day == "" {
		day = env.Time.UTC().Format(time.DateOnly)
	}
	reach := []string{"conv:" + conv}
	if m.Agent != "" {
		reach = append(reach, "agent:"+m.Agent)
	}
	return b.index(docID, Doc{Kind: kind, Text: text, Title: m.Title, Subject: env.Subject, Seq: env.Seq,
		Conversation: conv, Run: run, Step: step, Agent: m.Agent, Channel: m.Channel, Day: day, At: at, Reach: reach})
}

// memoryWrite indexes what a memory tool wrote, once its result says it
// did (a provenance path).
func (b *batch) memoryWrite(conv string, env events.Envelope, e *events.ToolCompleted, at string) error {
	if !memoryTools[e.Tool] {
		return nil
	}
	key := prefixCall + conv + "/" + e.CallID
	var call pendingCall
	ok, err := b.get(key, &call)
	if err != nil || !ok {
		return err
	}
	b.del(key)
	prov, _ := e.Meta["provenance"].(map[string]any)
	path, _ := prov["path"].(string)
	if e.IsError || path == "" {
		return nil
	}
	var m convMeta
	if _, err := b.get(prefixConv+conv, &m); err != nil {
		return err
	}
	var a struct {
		Text    string  `json:"text"`
		Name    string  `json:"name"`
		Page    string  `json:"page"`
		Content *string `json:"content"`
		Append  *string `json:"append"`
		Replace *struct {
			Old string `json:"old"`
			New string `json:"new"`
		} `json:"replace"`
	}
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return nil // the tool refused it too: no path would be set
	}
	doc := Doc{Subject: env.Subject, Seq: env.Seq, Conversation: conv, Run: e.RunID, Step: e.Step, Agent: m.Agent,
		Channel: m.Channel, At: at, Path: path, Day: env.Time.UTC().Format(time.DateOnly)}
	switch call.Tool {
	case "memory_save":
		doc.Kind, doc.Text, doc.Reach = KindNote, a.Text, []string{"agent:" + m.Agent}
		return b.index("n:"+seqID(env.Seq), doc)
	case "user_memory_save", "user_memory_forget":
		var text string
		if _, err := b.get(prefixFact+a.Name, &text); err != nil {
			return err
		}
		switch {
		case call.Tool == "user_memory_save":
			text = joinLine(text, a.Text)
		case a.Text == "":
			text = ""
		default:
			var keep []string
			for l := range strings.Lines(text) {
				if !strings.Contains(l, a.Text) {
					keep = append(keep, l)
				}
			}
			text = strings.Join(keep, "")
		}
		if text == "" {
			b.del(prefixFact + a.Name)
			b.remove("f:" + a.Name)
			return nil
		}
		if err := b.put(prefixFact+a.Name, text); err != nil {
			return err
		}
		doc.Kind, doc.Text, doc.Title, doc.Reach = KindFact, text, a.Name, []string{"all"}
		return b.index("f:"+a.Name, doc)
	case "wiki_apply":
		var text string
		if _, err := b.get(prefixWiki+a.Page, &text); err != nil {
			return err
		}
		switch {
		case a.Content != nil:
			text = *a.Content
		case a.Append != nil:
			text = joinLine(text, *a.Append)
		case a.Replace != nil:
			text = strings.Replace(text, a.Replace.Old, a.Replace.New, 1)
		}
		if err := b.put(prefixWiki+a.Page, text); err != nil {
			return err
		}
		doc.Kind, doc.Text, doc.Title, doc.Reach = KindWiki, text, a.Page, []string{"all"}
		return b.index("w:"+a.Page, doc)
	}
	return nil
}

func joinLine(old, line string) string {
	if old != "" && !strings.HasSuffix(old, "\n") {
		old += "\n"
	}
	return old + strings.TrimRight(line, "\n") + "\n"
}

// memoryFile indexes an agent's MEMORY.md as a decided proposal (or its
// rollback) left it.
func (b *batch) memoryFile(proposalID string, env events.Envelope, at string, rollback bool) error {
	var p proposal
	ok, err := b.get(prefixProp+proposalID, &p)
	if err != nil || !ok {
		return err
	}
	if p.File != "" {
		return nil // a persona file: the owner's words, not memory
	}
	text := p.New
	if rollback {
		text = p.Old
	}
	return b.index("M:"+p.Agent, Doc{Kind: KindMemory, Text: text, Title: "MEMORY.md", Subject: env.Subject, Seq: env.Seq,
		Agent: p.Agent, At: at, Path: "MEMORY.md", Day: env.Time.UTC().Format(time.DateOnly), Reach: []string{"agent:" + p.Agent}})
}

// canvas keeps a canvas's latest version whole and each older one as the
// lines it had that the version after it did not.
func (b *batch) canvas(id string, env events.Envelope, e events.Event, at string) error {
	key := prefixCanvas + id
	var c canvasMeta
	exists, err := b.get(key, &c)
	if err != nil {
		return err
	}
	link := func(conv string) {
		if conv != "" && !contains(c.Convs, conv) {
			c.Convs = append(c.Convs, conv)
		}
	}
	switch e := e.(type) {
	case *events.ArtifactCreated:
		if exists {
			return nil
		}
		c = canvasMeta{Title: e.Title, Kind: e.Kind, Author: e.Author, Version: 1, Content: textContent(e.Kind, e.Content)}
		link(e.Conversation)
	case *events.ArtifactWritten:
		if !exists {
			return nil
		}
		switch {
		case e.Replaces && e.Version == c.Version:
		case e.Version == c.Version+1:
			if gone := removedLines(c.Content, textContent(c.Kind, e.Content)); gone != "" {
				reach := canvasReach(c)
				if err := b.index(canvasVersionID(id, c.Version), Doc{Kind: KindCanvasV, Text: gone, Title: c.Title,
					Subject: c.Subject, Seq: c.Seq, Canvas: id, Version: c.Version, Agent: c.Author, At: c.At,
					Day: c.At[:10], Reach: reach}); err != nil {
					return err
				}
				c.Olds = append(c.Olds, c.Version)
			}
		default:
			return nil
		}
		c.Version, c.Content = e.Version, textContent(c.Kind, e.Content)
		link(e.Conversation)
	case *events.ArtifactRenamed:
		if !exists {
			return nil
		}
		c.Title = e.Title
		link(e.Conversation)
	case *events.ArtifactDeleted:
		if !exists {
			return nil
		}
		b.remove("c:" + id)
		for _, v := range c.Olds {
			b.remove(canvasVersionID(id, v))
		}
		b.del(key)
		return nil
	}
	if _, renamed := e.(*events.ArtifactRenamed); !renamed {
		c.Subject, c.Seq, c.At = env.Subject, env.Seq, at
	}
	if err := b.put(key, c); err != nil {
		return err
	}
	return b.index("c:"+id, Doc{Kind: KindCanvas, Text: c.Content, Title: c.Title, Subject: c.Subject, Seq: c.Seq,
		Canvas: id, Version: c.Version, Agent: c.Author, At: c.At, Day: c.At[:10], Reach: canvasReach(c)})
}

func canvasVersionID(id string, v int) string { return "cv:" + id + ":" + strconv.Itoa(v) }

// canvasReach follows the canvas reach rules: its author and the
// conversations linked to it.
func canvasReach(c canvasMeta) []string {
	r := []string{"agent:" + c.Author}
	for _, conv := range c.Convs {
		r = append(r, "conv:"+conv)
	}
	return r
}

// textContent is what of a version is text: an image's base64 is not.
func textContent(kind, content string) string {
	if kind == events.KindImage {
		return ""
	}
	return content
}

// removedLines are old's non-blank lines that new does not have.
func removedLines(old, new string) string {
	have := map[string]bool{}
	for l := range strings.Lines(new) {
		have[strings.TrimRight(l, "\r\n")] = true
	}
	var out strings.Builder
	for l := range strings.Lines(old) {
		t := strings.TrimRight(l, "\r\n")
		if strings.TrimSpace(t) != "" && !have[t] {
			out.WriteString(t + "\n")
		}
	}
	return out.String()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
