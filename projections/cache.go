package projections

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	json "github.com/segmentio/encoding/json"
	"go.etcd.io/bbolt"
)

// recordCache keeps the records of a batch's hot buckets decoded: within
// one Runner batch a conversation's or a run's record is decoded from
// bbolt once, changed in memory by each of its events, and encoded and
// put once, when the batch commits (flush). getJSON and putJSON use it
// when their bucket is one of its buckets; everything else reads and
// writes bbolt as before.
//
// Only buckets whose every read inside Apply goes through getJSON and
// every write through putJSON may be cached (a direct Get or Cursor
// would see the value before the batch). Rebuild does not use the cache:
// it is the reference TestRebuildIsByteIdenticalToLive compares the
// Runner with.
type recordCache struct {
	buckets map[*bbolt.Bucket]map[string]*cachedRecord
	dirty   []dirtyRecord // in first-put order
	// indexes holds the last Put (or Delete: nil) of each key of the
	// cached index buckets, written at flush in key order.
	indexes map[*bbolt.Bucket]map[string]*indexOp
}

type indexOp struct {
	val []byte
	del bool
}

type cachedRecord struct {
	v     any // the value last put or read, not a pointer
	dirty bool
}

type dirtyRecord struct {
	b   *bbolt.Bucket
	key string
	rec *cachedRecord
}

// cachedBuckets are the buckets the Runner caches: the records rewritten
// by most events (one per conversation, one per run).
var cachedBuckets = []string{bucketConversations, bucketRuns}

// cachedIndexes are key-only indexes the Runner writes at flush: each
// event of a conversation moves its key in bucketConvByUpdated and puts
// or deletes it in bucketConvOpen; only the batch's last move is written.
// Inside Apply they are written with putKey and deleteKey and never read.
var cachedIndexes = []string{bucketConvByUpdated, bucketConvOpen}

// Tx is the write transaction a projection's Apply gets: bbolt's, with
// the Runner batch's record cache (none in Rebuild). A writable bbolt
// transaction returns the same *Bucket for a name each time, so the
// bucket pointer names the bucket in the cache.
type Tx struct {
	*bbolt.Tx
	cache *recordCache // nil: every read and write goes to bbolt
}

// cacheRecords gives tx a cache of the cached buckets that exist in it;
// the func it returns writes the changed records and drops the cache
// (call it before Commit; on an error, roll back).
func cacheRecords(btx *bbolt.Tx) (tx *Tx, flush func() error) {
	c := &recordCache{buckets: map[*bbolt.Bucket]map[string]*cachedRecord{}, indexes: map[*bbolt.Bucket]map[string]*indexOp{}}
	for _, name := range cachedBuckets {
		if b := btx.Bucket([]byte(name)); b != nil {
			c.buckets[b] = map[string]*cachedRecord{}
		}
	}
	for _, name := range cachedIndexes {
		if b := btx.Bucket([]byte(name)); b != nil {
			c.indexes[b] = map[string]*indexOp{}
		}
	}
	tx = &Tx{Tx: btx, cache: c}
	flush = func() error {
		tx.cache = nil
		for _, d := range c.dirty {
			raw, err := json.Marshal(d.rec.v)
			if err != nil {
				return fmt.Errorf("encode %q: %w", d.key, err)
			}
			if err := d.b.Put([]byte(d.key), raw); err != nil {
				return err
			}
		}
		for b, ops := range c.indexes {
			for _, k := range slices.Sorted(maps.Keys(ops)) {
				var err error
				if op := ops[k]; op.del {
					err = b.Delete([]byte(k))
				} else {
					err = b.Put([]byte(k), op.val)
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	return tx, flush
}

// records returns the cache of b's bucket, or nil.
func (tx *Tx) records(b *bbolt.Bucket) map[string]*cachedRecord {
	if tx == nil || tx.cache == nil || b == nil {
		return nil
	}
	return tx.cache.buckets[b]
}

// load copies the cached value into v (a pointer to the same type).
func (r *cachedRecord) load(key []byte, v any) error {
	dst, src := reflect.ValueOf(v), reflect.ValueOf(r.v)
	if dst.Kind() == reflect.Pointer && !dst.IsNil() && src.Type() == dst.Type().Elem() {
		dst.Elem().Set(src)
		return nil
	}
	// Another type than was put: through JSON, as bbolt would give it.
	raw, err := json.Marshal(r.v)
	if err == nil {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		return fmt.Errorf("decode %q: %w", key, err)
	}
	return nil
}

// cachedGet is getJSON through the cache of b's bucket: the first read of
// key decodes it from bbolt and keeps a copy.
func cachedGet(b *bbolt.Bucket, recs map[string]*cachedRecord, key []byte, v any) (bool, error) {
	if r, ok := recs[string(key)]; ok {
		if r.v == nil {
			return false, nil
		}
		return true, r.load(key, v)
	}
	raw := b.Get(key)
	if raw == nil {
		recs[string(key)] = &cachedRecord{}
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("decode %q: %w", key, err)
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		recs[string(key)] = &cachedRecord{v: rv.Elem().Interface()}
	}
	return true, nil
}

// cachedPut is putJSON through the cache: the value is encoded at flush.
func cachedPut(rc *recordCache, b *bbolt.Bucket, recs map[string]*cachedRecord, key []byte, v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return fmt.Errorf("encode %q: nil record", key)
		}
		v = rv.Elem().Interface()
	}
	r, ok := recs[string(key)]
	if !ok {
		r = &cachedRecord{}
		recs[string(key)] = r
	}
	r.v = v
	if !r.dirty {
		r.dirty = true
		rc.dirty = append(rc.dirty, dirtyRecord{b: b, key: string(key), rec: r})
	}
	return nil
}

// indexOps returns the cached writes of b's index bucket, or nil.
func (tx *Tx) indexOps(b *bbolt.Bucket) map[string]*indexOp {
	if tx == nil || tx.cache == nil || b == nil {
		return nil
	}
	return tx.cache.indexes[b]
}

// putKey is b.Put, deferred to the flush for a cached index.
func (tx *Tx) putKey(b *bbolt.Bucket, key, val []byte) error {
	if ops := tx.indexOps(b); ops != nil {
		ops[string(key)] = &indexOp{val: slices.Clone(val)}
		return nil
	}
	return b.Put(key, val)
}

// deleteKey is b.Delete, deferred to the flush for a cached index.
func (tx *Tx) deleteKey(b *bbolt.Bucket, key []byte) error {
	if ops := tx.indexOps(b); ops != nil {
		ops[string(key)] = &indexOp{del: true}
		return nil
	}
	return b.Delete(key)
}
