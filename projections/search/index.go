// Package search is the recall projection: a full-text index of what the
// crew said, decided and wrote — owner messages, final replies,
// conversation summaries, memory notes, MEMORY.md, the owner's facts, wiki
// pages and canvas versions — fed from the log like the bbolt projections
// and rebuilt from it at will (`crew projections rebuild search`).
//
// The index is bleve (scorch) under <home>/data/search/index.bleve. Its
// checkpoint (the stream sequence applied up to) and the little state the
// feed folds (which agent and channel a conversation is, a wiki page's
// text, a canvas's latest version) live in the index's internal storage
// and are written in the same bleve batch as the documents, so a crash
// between a batch and the next leaves documents and checkpoint agreeing:
// the feed resumes at checkpoint+1 (exactly-once apply).
//
// Every document carries its source — the event's subject and stream
// sequence, and the conversation, run and step when it has them — so a hit
// links to the exact event. The log is redacted when appended (R-X-6), and
// the feed redacts again with the process's secrets before indexing: a
// secret is never indexed.
//
// Vectors (embeddings.go), when an embedding route is configured, live
// beside the index in vectors.db; queries then rank by reciprocal-rank
// fusion of BM25 and cosine. Without one, BM25 alone.
package search

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
)

// Document kinds.
const (
	KindMessage = "message"        // a message stored on a conversation (owner, job prompt, brief)
	KindReply   = "reply"          // an agent's final reply of a step
	KindSummary = "summary"        // a conversation's summary
	KindNote    = "note"           // a memory_save line of an agent's daily note
	KindMemory  = "memory"         // an agent's MEMORY.md as applied
	KindFact    = "fact"           // users/owner/facts/<name>.md
	KindWiki    = "wiki"           // wiki/<page>.md
	KindCanvas  = "canvas"         // a canvas's latest version, whole
	KindCanvasV = "canvas_version" // an older version: what it had that the next did not
)

// Scopes group kinds for the recall tool and the search page.
var Scopes = map[string][]string{
	"conversations": {KindMessage, KindReply, KindSummary},
	"memory":        {KindNote, KindMemory, KindFact, KindWiki},
	"canvas":        {KindCanvas, KindCanvasV},
}

// Doc is one indexed document, as stored.
type Doc struct {
	Kind         string `json:"kind"`
	Text         string `json:"text"`
	Title        string `json:"title,omitempty"`
	Subject      string `json:"subject"`
	Seq          uint64 `json:"seq"`
	Conversation string `json:"conv,omitempty"`
	Run          string `json:"run,omitempty"`
	Step         int    `json:"step,omitempty"`
	Agent        string `json:"agent,omitempty"`
	Channel      string `json:"channel,omitempty"`
	Day          string `json:"day,omitempty"`
	At           string `json:"at"` // RFC 3339
	Path         string `json:"path,omitempty"`
	Canvas       string `json:"canvas,omitempty"`
	Version      int    `json:"version,omitempty"`
	// Reach is who may recall it: "all", "agent:<id>", "conv:<id>".
	Reach []string `json:"reach"`
}

// Index is the open search index. Its methods are safe for concurrent use.
type Index struct {
	dir string
	idx bleve.Index
	vec *vectors // nil without an embedding route

	reset bool // Open found an older shape and started again

	mu     sync.Mutex
	closed bool
}

// IndexDir is where the index of a home lives.
func IndexDir(home string) string { return filepath.Join(home, "data", "search") }

// MaxSegmentDocs bounds the documents of one segment of the index, so
// what a background merge reads (its segments' mapped pages) and builds
// (their postings, in memory) stays tens of MB: bleve's default, 5
// million, let one merge on a million-event home hold 290 MB
// (docs/performance.md, "Memory"). A segment is merged only while it has
// fewer than half; more segments cost a query a little more.
const MaxSegmentDocs = 50_000

// Open opens (or creates) the index under dir.
func Open(dir string) (*Index, error) { return open(dir, MaxSegmentDocs) }

// open opens the index with segments of at most maxDocs documents.
func open(dir string, maxDocs int64) (*Index, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	path := filepath.Join(dir, "index.bleve")
	// Another process holding the index (a second serve on this home)
	// is an error after a moment, never a hang. The merge plan's other
	// options are scorch's defaults.
	cfg := map[string]any{"bolt_timeout": "3s", "scorchMergePlanOptions": map[string]any{"MaxSegmentSize": maxDocs}}
	idx, err := bleve.OpenUsing(path, cfg)
	fresh := errors.Is(err, bleve.ErrorIndexPathDoesNotExist)
	reset := false
	if err == nil {
		// An index of another shape (an older build's) is indexed again
		// from the log, in the background like any catch-up.
		if v, verr := idx.GetInternal([]byte(keyVersion)); verr != nil || string(v) != strconv.Itoa(indexVersion) {
			idx.Close()
			if err = os.RemoveAll(path); err == nil {
				fresh, reset = true, true
			}
		}
	}
	if fresh {
		idx, err = bleve.NewUsing(path, newMapping(), bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, cfg)
		if err == nil {
			err = idx.SetInternal([]byte(keyVersion), []byte(strconv.Itoa(indexVersion)))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("search index %s: %w (rebuild it: crew projections rebuild search)", path, err)
	}
	return &Index{dir: dir, idx: idx, reset: reset}, nil
}

// Reset reports whether Open found an index of an older shape and
// started it again empty (serve says so: it is caught up from the log).
func (x *Index) Reset() bool { return x.reset }

// Remove deletes the index under dir, for a rebuild. The vectors stay:
// they are a cache by content hash (see requeue).
func Remove(dir string) error {
	if err := os.RemoveAll(filepath.Join(dir, "index.bleve")); err != nil {
		return fmt.Errorf("remove search index: %w", err)
	}
	return nil
}

// Dir is the folder the index lives in.
func (x *Index) Dir() string { return x.dir }

// Close closes the index and its vectors.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	err := x.idx.Close()
	if x.vec != nil {
		err = errors.Join(err, x.vec.close())
	}
	return err
}

// Count is the number of documents indexed.
func (x *Index) Count() (uint64, error) { return x.idx.DocCount() }

func newMapping() mapping.IndexMapping {
	// Only what a query reads is indexed: the words of text and title
	// (with term vectors, for phrases), and the fields the filters and
	// lookups name; the rest is stored only. No field goes into _all, and
	// only seq keeps doc values (Around sorts by it).
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store = true
	text.IncludeTermVectors = true
	text.IncludeInAll = false
	text.DocValues = false
	title := bleve.NewTextFieldMapping()
	title.Analyzer = en.AnalyzerName
	title.Store = true
	title.IncludeTermVectors = false
	title.IncludeInAll = false
	title.DocValues = false
	kw := bleve.NewKeywordFieldMapping()
	kw.Analyzer = keyword.Name
	kw.Store = false
	kw.IncludeTermVectors = false
	kw.IncludeInAll = false
	kw.DocValues = false
	kwStored := bleve.NewKeywordFieldMapping()
	kwStored.Store = true
	kwStored.IncludeTermVectors = false
	kwStored.IncludeInAll = false
	kwStored.DocValues = false
	stored := bleve.NewTextFieldMapping()
	stored.Index = false
	stored.Store = true
	stored.IncludeInAll = false
	stored.IncludeTermVectors = false
	stored.DocValues = false
	seq := bleve.NewNumericFieldMapping()
	seq.Store = true
	seq.IncludeInAll = false
	num := bleve.NewNumericFieldMapping()
	num.Store = true
	num.Index = false
	num.IncludeInAll = false
	num.DocValues = false
	at := bleve.NewDateTimeFieldMapping()
	at.Store = true
	at.IncludeInAll = false
	at.DocValues = false

	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt("text", text)
	doc.AddFieldMappingsAt("title", title)
	for _, f := range []string{"kind", "conv", "agent", "subject"} {
		doc.AddFieldMappingsAt(f, kwStored)
	}
	for _, f := range []string{"canvas", "path", "channel", "day", "run"} {
		doc.AddFieldMappingsAt(f, stored)
	}
	doc.AddFieldMappingsAt("reach", kw)
	doc.AddFieldMappingsAt("seq", seq)
	for _, f := range []string{"step", "version"} {
		doc.AddFieldMappingsAt(f, num)
	}
	doc.AddFieldMappingsAt("at", at)

	m := bleve.NewIndexMapping()
	m.DefaultMapping = doc
	m.DefaultAnalyzer = en.AnalyzerName
	m.StoreDynamic = false
	m.IndexDynamic = false
	m.DocValuesDynamic = false
	return m
}
