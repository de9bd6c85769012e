package projections

import (
	"fmt"
	json "github.com/segmentio/encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"go.etcd.io/bbolt"
)

// getJSON decodes the value under key into v and reports whether it was
// there. A missing bucket reads as empty.
func getJSON(b *bbolt.Bucket, key []byte, v any) (bool, error) {
	return (*Tx)(nil).getJSON(b, key, v)
}

// getJSON is getJSON through the batch's cache when b is cached.
func (tx *Tx) getJSON(b *bbolt.Bucket, key []byte, v any) (bool, error) {
	if b == nil {
		return false, nil
	}
	if recs := tx.records(b); recs != nil {
		return cachedGet(b, recs, key, v)
	}
	raw := b.Get(key)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("decode %q: %w", key, err)
	}
	return true, nil
}

// getTx reads the view under key in bucket, or ErrNotFound.
func getTx[T any](tx *Tx, bucket, key string) (T, error) {
	var v T
	found, err := tx.getJSON(tx.Bucket([]byte(bucket)), []byte(key), &v)
	if err == nil && !found {
		err = ErrNotFound
	}
	return v, err
}

// get is getTx in a read transaction of its own; what names the view in
// the error ("get job j1: …").
func get[T any](db *bbolt.DB, bucket, what, key string) (T, error) {
	var v T
	err := db.View(func(tx *bbolt.Tx) (err error) {
		v, err = getTx[T](&Tx{Tx: tx}, bucket, key)
		return err
	})
	if err != nil {
		var zero T
		return zero, fmt.Errorf("get %s %s: %w", what, key, err)
	}
	return v, nil
}

// putJSON stores v under key (encoded when the Runner's batch commits, for
// a cached bucket: see recordCache).
func (tx *Tx) putJSON(b *bbolt.Bucket, key []byte, v any) error {
	if recs := tx.records(b); recs != nil {
		return cachedPut(tx.cache, b, recs, key, v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", key, err)
	}
	return b.Put(key, raw)
}

// timeKey is a big-endian key that sorts like t (microseconds, the
// precision of event times), also before 1970.
func timeKey(t time.Time) []byte { return u64(uint64(t.UnixMicro()) ^ 1<<63) }

// truncate cuts s to at most n runes, the last being "…" when it was cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n-1 {
			return s[:i] + "…"
		}
		count++
	}
	return s
}

// oneLine collapses runs of white space (newlines included) to one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// seqKey is "<conversation>\x00<seq>": a prefix scan of "<conversation>\x00"
// lists a conversation's entries in stream order. Ids never hold NUL.
func seqKey(prefix string, seq uint64) []byte {
	k := make([]byte, 0, len(prefix)+9)
	k = append(k, prefix...)
	k = append(k, 0)
	return append(k, u64(seq)...)
}

func seqPrefix(prefix string) []byte { return append([]byte(prefix), 0) }
