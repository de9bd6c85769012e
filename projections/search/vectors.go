package search

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"
)

// Embedder turns texts into vectors: an embedding route (loop/llm).
type Embedder interface {
	// Route names it, "ollama:nomic-embed-text".
	Route() string
	// Embed returns one vector per text and the input tokens the provider
	// counted (0 when it reported none).
	Embed(ctx context.Context, texts []string) ([][]float32, int, error)
}

// EmbedUsage records one embedding call in the usage ledger (purpose
// embed); err is the call's failure.
type EmbedUsage func(ctx context.Context, route string, texts, tokens int, latency time.Duration, err error)

// vectorsFile holds the vectors beside the index: "vec" maps a content
// hash to its vector (the cache: a text is embedded once, across
// rebuilds), "doc" a document id to the hash of its text, "pending" the
// documents still to embed (id → text).
const vectorsFile = "vectors.db"

var (
	bucketVec     = []byte("vec")
	bucketDoc     = []byte("doc")
	bucketPending = []byte("pending")
)

// embedBatch is how many texts one embedding request carries; embedChars
// caps each text (the start of a long document stands for it).
const (
	embedBatch = 32
	embedChars = 2000
)

type vectors struct {
	db     *bbolt.DB
	emb    Embedder
	usage  EmbedUsage
	logger *slog.Logger
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	lastErr string
}

// EnableEmbeddings opens the vectors beside x and embeds documents in the
// background with emb, recording each call with usage. Call it before
// Start.
func (x *Index) EnableEmbeddings(emb Embedder, usage EmbedUsage, logger *slog.Logger) error {
	db, err := bbolt.Open(filepath.Join(x.dir, vectorsFile), 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("search vectors: %w", err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketVec, bucketDoc, bucketPending} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return fmt.Errorf("search vectors: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	v := &vectors{db: db, emb: emb, usage: usage, logger: logger, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	x.vec = v
	go v.run(ctx, x)
	v.poke()
	return nil
}

// EmbeddingRoute is the route vectors come from, "" for BM25 alone.
func (x *Index) EmbeddingRoute() string {
	if x.vec == nil {
		return ""
	}
	return x.vec.emb.Route()
}

func (v *vectors) close() error {
	v.cancel()
	<-v.done
	return v.db.Close()
}

func (v *vectors) poke() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// ready: some document has a vector.
func (v *vectors) ready() bool {
	n := 0
	v.db.View(func(tx *bbolt.Tx) error { n = tx.Bucket(bucketDoc).Stats().KeyN; return nil })
	return n > 0
}

func hashText(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// enqueue notes the documents a batch indexed (to embed) and deleted (to
// forget). The text is read back from the index when embedded.
func (v *vectors) enqueue(indexed, deleted []string) {
	if len(indexed) == 0 && len(deleted) == 0 {
		return
	}
	err := v.db.Update(func(tx *bbolt.Tx) error {
		p, d := tx.Bucket(bucketPending), tx.Bucket(bucketDoc)
		for _, id := range deleted {
			if err := errors.Join(p.Delete([]byte(id)), d.Delete([]byte(id))); err != nil {
				return err
			}
		}
		for _, id := range indexed {
			if err := p.Put([]byte(id), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		v.logger.Warn("search vectors: queue", "err", err)
	}
	v.poke()
}

// run embeds pending documents until ctx ends. A failing route is tried
// again a minute later (or at the next batch indexed).
func (v *vectors) run(ctx context.Context, x *Index) {
	defer close(v.done)
	for {
		more, err := v.step(ctx, x)
		v.mu.Lock()
		v.lastErr = ""
		if err != nil {
			v.lastErr = err.Error()
		}
		v.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			v.logger.Warn("search: embedding failed; BM25 alone until it works", "route", v.emb.Route(), "err", err)
		}
		if more && err == nil {
			continue
		}
		wait := time.Minute
		if err == nil {
			wait = time.Hour
		}
		select {
		case <-ctx.Done():
			return
		case <-v.wake:
		case <-time.After(wait):
		}
	}
}

// step embeds up to embedBatch pending documents; more reports whether
// some are left.
func (v *vectors) step(ctx context.Context, x *Index) (more bool, err error) {
	var ids []string
	v.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketPending).Cursor()
		for k, _ := c.First(); k != nil && len(ids) < embedBatch+1; k, _ = c.Next() {
			ids = append(ids, string(k))
		}
		return nil
	})
	if len(ids) == 0 {
		return false, nil
	}
	if more = len(ids) > embedBatch; more {
		ids = ids[:embedBatch]
	}
	type item struct {
		id   string
		hash []byte
		vec  []float32
		text string
	}
	var items []item
	var missing []int
	err = v.db.View(func(tx *bbolt.Tx) error {
		for _, id := range ids {
			h, ok, err := x.Get(ctx, id, nil)
			if err != nil {
				return err
			}
			if !ok {
				items = append(items, item{id: id}) // gone since: just drop it
				continue
			}
			text := h.Title + "\n" + h.Text
			if len(text) > embedChars {
				text = text[:embedChars]
			}
			it := item{id: id, hash: hashText(text), text: text}
			if raw := tx.Bucket(bucketVec).Get(it.hash); raw != nil {
				it.vec = decodeVec(raw)
			} else {
				missing = append(missing, len(items))
			}
			items = append(items, it)
		}
		return nil
	})
	if err != nil {
		return more, err
	}
	if len(missing) > 0 {
		texts := make([]string, len(missing))
		for i, j := range missing {
			texts[i] = items[j].text
		}
		start := time.Now()
		vecs, tokens, err := v.emb.Embed(ctx, texts)
		if err == nil && len(vecs) != len(texts) {
			err = fmt.Errorf("%s returned %d vectors for %d texts", v.emb.Route(), len(vecs), len(texts))
		}
		if v.usage != nil {
			v.usage(ctx, v.emb.Route(), len(texts), tokens, time.Since(start), err)
		}
		if err != nil {
			return more, err
		}
		for i, j := range missing {
			items[j].vec = vecs[i]
		}
	}
	return more, v.db.Update(func(tx *bbolt.Tx) error {
		vb, db, pb := tx.Bucket(bucketVec), tx.Bucket(bucketDoc), tx.Bucket(bucketPending)
		for _, it := range items {
			if err := pb.Delete([]byte(it.id)); err != nil {
				return err
			}
			if it.hash == nil {
				continue
			}
			if err := vb.Put(it.hash, encodeVec(normalize(it.vec))); err != nil {
				return err
			}
			if err := db.Put([]byte(it.id), it.hash); err != nil {
				return err
			}
		}
		return nil
	})
}

// Pending counts the documents still to embed (0 without embeddings).
func (x *Index) Pending() int {
	if x.vec == nil {
		return 0
	}
	n := 0
	x.vec.db.View(func(tx *bbolt.Tx) error { n = tx.Bucket(bucketPending).Stats().KeyN; return nil })
	return n
}

// EmbeddingError is the last embedding failure, "" when the last call
// worked.
func (x *Index) EmbeddingError() string {
	if x.vec == nil {
		return ""
	}
	x.vec.mu.Lock()
	defer x.vec.mu.Unlock()
	return x.vec.lastErr
}

// nearest returns up to n document ids by cosine similarity to text,
// nearest first.
func (v *vectors) nearest(ctx context.Context, text string, n int) ([]string, error) {
	var q []float32
	h := hashText(text)
	v.db.View(func(tx *bbolt.Tx) error {
		if raw := tx.Bucket(bucketVec).Get(h); raw != nil {
			q = decodeVec(raw)
		}
		return nil
	})
	if q == nil {
		start := time.Now()
		vecs, tokens, err := v.emb.Embed(ctx, []string{text})
		if err == nil && len(vecs) != 1 {
			err = fmt.Errorf("%s returned %d vectors for 1 text", v.emb.Route(), len(vecs))
		}
		if v.usage != nil {
			v.usage(ctx, v.emb.Route(), 1, tokens, time.Since(start), err)
		}
		if err != nil {
			return nil, err
		}
		q = normalize(vecs[0])
		v.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketVec).Put(h, encodeVec(q)) })
	}
	type scored struct {
		id string
		s  float32
	}
	var all []scored
	err := v.db.View(func(tx *bbolt.Tx) error {
		vb := tx.Bucket(bucketVec)
		return tx.Bucket(bucketDoc).ForEach(func(k, hash []byte) error {
			raw := vb.Get(hash)
			if len(raw) != 4*len(q) {
				return nil
			}
			all = append(all, scored{string(k), dotRaw(q, raw)})
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.s != b.s {
			if a.s > b.s {
				return -1
			}
			return 1
		}
		if a.id < b.id {
			return -1
		}
		return 1
	})
	out := make([]string, 0, min(n, len(all)))
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.id)
	}
	return out, nil
}

func normalize(v []float32) []float32 {
	var sum float64
	for _, f := range v {
		sum += float64(f) * float64(f)
	}
	if sum == 0 {
		return v
	}
	n := float32(math.Sqrt(sum))
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = f / n
	}
	return out
}

func encodeVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVec(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func dotRaw(q []float32, raw []byte) float32 {
	var s float32
	for i, f := range q {
		s += f * math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return s
}

// requeue forgets which document had which vector and queues every id in
// ids to embed again, after a rebuild; the vectors stay, by content hash,
// so nothing already embedded is asked for again. Without a vectors file
// (no embedding route yet) it does nothing.
func requeue(dir string, ids []string) error {
	path := filepath.Join(dir, vectorsFile)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("search vectors: %w", err)
	}
	defer db.Close()
	return db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketDoc, bucketPending} {
			if err := tx.DeleteBucket(b); err != nil && !errors.Is(err, bbolt.ErrBucketNotFound) {
				return err
			}
		}
		if _, err := tx.CreateBucketIfNotExists(bucketDoc); err != nil {
			return err
		}
		p, err := tx.CreateBucketIfNotExists(bucketPending)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := p.Put([]byte(id), nil); err != nil {
				return err
			}
		}
		return nil
	})
}
