package projections

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// Projection is one read model. Implementations keep no state in memory:
// everything lives in the buckets they declare.
type Projection interface {
	// Name identifies the projection: its checkpoint key and its consumer
	// ("proj_<name>"). Lowercase letters, digits, '_' and '-'.
	Name() string
	// Buckets are the top-level buckets the projection owns; Rebuild
	// deletes exactly these. They exist when Apply is called.
	Buckets() []string
	// Apply updates the projection with one event inside tx. It must be
	// deterministic (see the package doc) and ignore events it does not
	// project. An error stops the projection at this event. The payload
	// env.Decode returns is shared with the other projections: Apply must
	// not change it.
	Apply(tx *Tx, env events.Envelope) error
}

// Selective is a projection that reads only some events. Wants reports
// whether Apply may change anything for an event of scope kind kind
// ("conv", "job", … : the subject's second token) and type typ; for the
// others the Runner and Rebuild skip Apply and only move the checkpoint.
// It must answer true for every event Apply does not ignore. A
// projection without Wants is given every event.
type Selective interface {
	Wants(kind, typ string) bool
}

// wants reports whether p is to be given an event of kind and typ.
func wants(p Projection, kind, typ string) bool {
	s, ok := p.(Selective)
	return !ok || s.Wants(kind, typ)
}

// subjectKind is the scope kind of a stored event's subject
// ("crew.conv.c1.message_received" → "conv"), without allocating.
func subjectKind(subject string) string {
	_, rest, _ := strings.Cut(subject, ".")
	kind, _, _ := strings.Cut(rest, ".")
	return kind
}

// Versioned is a projection whose buckets changed shape in some build:
// Open finds a database written at another version and projects it again
// from the start, in the background (Runner groups). A projection without
// Version is version 1.
type Versioned interface {
	Version() int
}

func versionOf(p Projection) uint64 {
	if v, ok := p.(Versioned); ok {
		return uint64(v.Version())
	}
	return 1
}

// versionBucket holds each projection's version, key = name, value =
// big-endian uint64; absent is 1.
const versionBucket = "_versions"

// upgrade resets p when the database holds it at another version: its
// buckets and checkpoint go, and it catches up from the start. It reports
// whether it did.
func upgrade(db *bbolt.DB, p Projection) (bool, error) {
	reset := false
	err := db.Update(func(tx *bbolt.Tx) error {
		stored := uint64(1)
		if b := tx.Bucket([]byte(versionBucket)); b != nil {
			if v := b.Get([]byte(p.Name())); len(v) == 8 {
				stored = binary.BigEndian.Uint64(v)
			}
		}
		want := versionOf(p)
		if stored == want {
			return nil
		}
		cp, err := readCheckpoint(tx, p.Name())
		if err != nil {
			return err
		}
		if cp > 0 {
			if err := deleteProjection(tx, p); err != nil {
				return err
			}
			reset = true
		}
		return writeVersion(tx, p)
	})
	if err != nil {
		return false, fmt.Errorf("upgrade projection %s: %w", p.Name(), err)
	}
	return reset, nil
}

func writeVersion(tx *bbolt.Tx, p Projection) error {
	b, err := tx.CreateBucketIfNotExists([]byte(versionBucket))
	if err != nil {
		return err
	}
	return b.Put([]byte(p.Name()), u64(versionOf(p)))
}

// All returns every projection of this build, in a stable order.
func All() []Projection {
	return []Projection{Conversations{}, Runs{}, Jobs{}, Summaries{}, Memory{}, Canvases{}, Usage{}, MemoryWrites{}, Activity{}, Chat{}}
}

// Named is the projection called name, as a list; "" is All().
func Named(name string) ([]Projection, error) {
	if name == "" {
		return All(), nil
	}
	var names []string
	for _, p := range All() {
		if p.Name() == name {
			return []Projection{p}, nil
		}
		names = append(names, p.Name())
	}
	return nil, fmt.Errorf("no projection %q (have: %s)", name, strings.Join(names, ", "))
}

// checkpointBucket holds each projection's last applied stream sequence,
// key = name, value = big-endian uint64.
const checkpointBucket = "_checkpoints"

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// consumerName is the durable JetStream consumer feeding projection name
// (this process's own when several share a cluster: events.Log.Durable).
func consumerName(log *events.Log, name string) string { return log.Durable("proj_" + name) }

// validate checks names and that no two projections share a bucket (a
// rebuild of one would wipe the other).
func validate(ps []Projection) error {
	names := map[string]bool{}
	owner := map[string]string{}
	for _, p := range ps {
		name := p.Name()
		if !namePattern.MatchString(name) {
			return fmt.Errorf("projection name %q: want 1-64 of [a-z0-9_-]", name)
		}
		if names[name] {
			return fmt.Errorf("projection %s given twice", name)
		}
		names[name] = true
		if len(p.Buckets()) == 0 {
			return fmt.Errorf("projection %s declares no buckets", name)
		}
		for _, b := range p.Buckets() {
			if b == "" || b == checkpointBucket || b == undecodableBucket || b == versionBucket {
				return fmt.Errorf("projection %s: bucket name %q is reserved", name, b)
			}
			if o, ok := owner[b]; ok {
				return fmt.Errorf("projections %s and %s both own bucket %q", o, name, b)
			}
			owner[b] = name
		}
	}
	return nil
}

// Lags are doctor's lines on a stopped home's log and its read models:
// the stream (events.Log.Describe), then each projection of All, its
// checkpoint in db and how far it is behind the stream's last sequence.
func Lags(ctx context.Context, log *events.Log, db *bbolt.DB) []string {
	line, last, err := log.Describe(ctx)
	if err != nil {
		return []string{fmt.Sprintf("  %v", err)}
	}
	lines := []string{line}
	for _, p := range All() {
		cp, err := Checkpoint(db, p.Name())
		if err != nil {
			lines = append(lines, fmt.Sprintf("  projection %s: %v", p.Name(), err))
			continue
		}
		lines = append(lines, fmt.Sprintf("  projection %s: at %d, lag %d", p.Name(), cp, last-min(cp, last)))
	}
	return lines
}

// Checkpoint returns the stream sequence projection name has applied up to
// (0 for none). It works on a stopped home, for `crew doctor`.
func Checkpoint(db *bbolt.DB, name string) (uint64, error) {
	var cp uint64
	err := db.View(func(tx *bbolt.Tx) error {
		var err error
		cp, err = readCheckpoint(tx, name)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("read checkpoint of %s: %w", name, err)
	}
	return cp, nil
}

func readCheckpoint(tx *bbolt.Tx, name string) (uint64, error) {
	b := tx.Bucket([]byte(checkpointBucket))
	if b == nil {
		return 0, nil
	}
	v := b.Get([]byte(name))
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("checkpoint of %s: %d bytes, want 8", name, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func writeCheckpoint(tx *bbolt.Tx, name string, seq uint64) error {
	b, err := tx.CreateBucketIfNotExists([]byte(checkpointBucket))
	if err != nil {
		return err
	}
	return b.Put([]byte(name), u64(seq))
}

// applyEvent applies env and advances the checkpoint in tx, for Rebuild.
// The Runner does the same per batch (ensureBuckets once, apply per event,
// the checkpoint once), so both write the same bytes.
func applyEvent(tx *bbolt.Tx, p Projection, env events.Envelope) error {
	if err := ensureBuckets(tx, p); err != nil {
		return &ApplyError{Projection: p.Name(), Subject: env.Subject, Seq: env.Seq, Err: err}
	}
	if wants(p, subjectKind(env.Subject), env.Type) {
		if err := apply(&Tx{Tx: tx}, p, env); err != nil {
			return err
		}
	}
	if err := writeCheckpoint(tx, p.Name(), env.Seq); err != nil {
		return &ApplyError{Projection: p.Name(), Subject: env.Subject, Seq: env.Seq, Err: fmt.Errorf("write checkpoint: %w", err)}
	}
	return nil
}

// ensureBuckets creates p's buckets: they exist when Apply is called.
func ensureBuckets(tx *bbolt.Tx, p Projection) error {
	for _, name := range p.Buckets() {
		if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
			return err
		}
	}
	return nil
}

// apply is p.Apply with the error naming the event.
func apply(tx *Tx, p Projection, env events.Envelope) error {
	if err := p.Apply(tx, env); err != nil {
		return &ApplyError{Projection: p.Name(), Subject: env.Subject, Seq: env.Seq, Err: err}
	}
	return nil
}

// deleteProjection removes p's buckets and checkpoint.
func deleteProjection(tx *bbolt.Tx, p Projection) error {
	for _, name := range p.Buckets() {
		if err := tx.DeleteBucket([]byte(name)); err != nil && !errors.Is(err, bbolt.ErrBucketNotFound) {
			return fmt.Errorf("delete bucket %s: %w", name, err)
		}
	}
	if b := tx.Bucket([]byte(checkpointBucket)); b != nil {
		if err := b.Delete([]byte(p.Name())); err != nil {
			return fmt.Errorf("delete checkpoint: %w", err)
		}
	}
	return nil
}

// Dump serializes p's checkpoint and every key of its buckets (nested
// buckets included) in key order, one line each, so two databases can be
// compared byte for byte. A missing bucket and an empty one dump alike.
func Dump(db *bbolt.DB, p Projection) ([]byte, error) {
	var buf bytes.Buffer
	err := db.View(func(tx *bbolt.Tx) error {
		cp, err := readCheckpoint(tx, p.Name())
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "checkpoint %s %d\n", p.Name(), cp)
		for _, name := range slices.Sorted(slices.Values(p.Buckets())) {
			if b := tx.Bucket([]byte(name)); b != nil {
				if err := dumpBucket(&buf, strconv.Quote(name), b); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dump %s: %w", p.Name(), err)
	}
	return buf.Bytes(), nil
}

func dumpBucket(buf *bytes.Buffer, path string, b *bbolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			if nested := b.Bucket(k); nested != nil {
				return dumpBucket(buf, path+"/"+strconv.Quote(string(k)), nested)
			}
		}
		fmt.Fprintf(buf, "%s %q %q\n", path, k, v)
		return nil
	})
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}
