package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A home's state that is not an event — a script's store, the web UI's
// logins — lives in a JetStream KV bucket beside the log, never in a
// local file, so every crew process on one cluster sees the others'
// writes (issue 30 item 4). On the embedded server a bucket is a local
// stream like the log.

// Buckets of per-home state.
const (
	// ScriptBucket holds tool_script's stores, key <agent>.<scope>.
	ScriptBucket = "crew_script_store"
	// SessionBucket holds the web UI's login sessions, key the SHA-256
	// of the session id (hex), each with a TTL.
	SessionBucket = "crew_web_sessions"
)

var (
	// ErrNotFound means a bucket holds no value for the key.
	ErrNotFound = errors.New("events: no such key")
	// ErrExists means Create found the key already there.
	ErrExists = errors.New("events: key exists")
)

// Bucket is a JetStream KV bucket: one value per key (no history), keys
// with or without a TTL of their own.
type Bucket struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	name   string
	max    int64
	raised *Raise
	sync   func() error // after each write; nil: none
}

// Raise is a raise of a stream's replicas that opening it made: found
// at From on a cluster of Servers servers, now at To (R-ES-8).
type Raise struct {
	Stream   string
	From, To int
	Servers  int
}

// Tell logs r at info on logger (a bucket's opener tells it); nil, no
// raise, tells nothing.
func (r *Raise) Tell(logger *slog.Logger) {
	if r != nil {
		logger.Info("raised a bucket's replicas: the cluster can place them", "stream", r.Stream, "from", r.From, "to", r.To, "servers", r.Servers)
	}
}

// BucketStream is the stream the KV bucket keeps its values on.
func BucketStream(bucket string) string { return "KV_" + bucket }

// OpenBucket creates or opens the bucket name (3 replicas on a cluster
// that can place them; one found at fewer is raised, see Raised). sync,
// when set, runs after each Put, Create and Delete, before it returns:
// on the embedded server with sync "always",
// Server.StreamSync(BucketStream(name)), so an acknowledged write (a
// login, a script's store) survives a power cut as an event does.
func OpenBucket(ctx context.Context, nc *nats.Conn, name, description string, sync func() error) (*Bucket, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", name, err)
	}
	kv, raised, err := openKV(ctx, nc, js, jetstream.KeyValueConfig{Bucket: name, Description: description, History: 1,
		LimitMarkerTTL: time.Second, Storage: jetstream.FileStorage})
	if err != nil {
		return nil, err
	}
	return &Bucket{js: js, kv: kv, name: name, max: nc.MaxPayload() - appendHeadroom, raised: raised, sync: sync}, nil
}

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.name }

// Raised is the raise of the bucket's replicas OpenBucket made, nil for
// none.
func (b *Bucket) Raised() *Raise { return b.raised }

// validKey is what a KV key may be: dot-separated tokens of letters,
// digits and -_=/.
var validKey = regexp.MustCompile(`^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$`)

func (b *Bucket) check(key string, value []byte) error {
	if !validKey.MatchString(key) {
		return fmt.Errorf("bucket %s key %q: %w", b.name, key, ErrInvalidID)
	}
	if b.max > 0 && int64(len(value)) > b.max {
		return fmt.Errorf("bucket %s key %s: %w: %d bytes, a value takes at most %d", b.name, key, ErrTooLarge, len(value), b.max)
	}
	return nil
}

// Get is key's value; ErrNotFound when there is none (never written,
// deleted, or its TTL ran out).
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, error) {
	if err := b.check(key, nil); err != nil {
		return nil, err
	}
	e, err := b.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("bucket %s key %s: %w", b.name, key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s key %s: %w", b.name, key, err)
	}
	return e.Value(), nil
}

// Put sets key to value; ttl > 0 (whole seconds, at least 1) makes the
// key vanish that long after this write.
func (b *Bucket) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := b.check(key, value); err != nil {
		return err
	}
	var err error
	if ttl > 0 {
		// kv.Put carries no TTL: publish the KV message itself.
		_, err = b.js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + b.name + "." + key, Data: value}, jetstream.WithMsgTTL(ttl))
	} else {
		_, err = b.kv.Put(ctx, key, value)
	}
	if err != nil {
		return fmt.Errorf("bucket %s key %s: %w", b.name, key, err)
	}
	return b.synced(key)
}

// Create sets key to value only if it holds none; ErrExists otherwise.
func (b *Bucket) Create(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := b.check(key, value); err != nil {
		return err
	}
	var opts []jetstream.KVCreateOpt
	if ttl > 0 {
		opts = append(opts, jetstream.KeyTTL(ttl))
	}
	_, err := b.kv.Create(ctx, key, value, opts...)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("bucket %s key %s: %w", b.name, key, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("bucket %s key %s: %w", b.name, key, err)
	}
	return b.synced(key)
}

// Delete removes key; deleting a key that holds nothing is no error.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := b.check(key, nil); err != nil {
		return err
	}
	if err := b.kv.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("bucket %s key %s: %w", b.name, key, err)
	}
	return b.synced(key)
}

// synced runs the bucket's sync after a write to key (none set: nothing).
func (b *Bucket) synced(key string) error {
	if b.sync == nil {
		return nil
	}
	if err := b.sync(); err != nil {
		return fmt.Errorf("bucket %s key %s: %w", b.name, key, err)
	}
	return nil
}

// openKV creates or updates a KV bucket as cfg says, at 3 replicas on a
// cluster (openReplicated).
func openKV(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, *Raise, error) {
	return openReplicated(ctx, nc, js, BucketStream(cfg.Bucket), func(ctx context.Context, replicas int) (jetstream.KeyValue, error) {
		cfg.Replicas = replicas
		return js.CreateOrUpdateKeyValue(ctx, cfg)
	})
}

// openReplicated creates or updates the stream behind a bucket with
// create, at 3 replicas on a cluster (none before, or one found at fewer
// on a cluster of at least 3 servers: raised, and told), else 1.
func openReplicated[T any](ctx context.Context, nc *nats.Conn, js jetstream.JetStream, stream string, create func(ctx context.Context, replicas int) (T, error)) (T, *Raise, error) {
	var found int
	replicas := 1
	if nc.ConnectedClusterName() != "" {
		replicas = ClusterReplicas
		found = foundStreamReplicas(ctx, js, stream)
	}
	try := func() (T, error) {
		tryCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return create(tryCtx, replicas)
	}
	b, err := try()
	// As for the log: a forming cluster of enough servers answers
	// "cannot replicate" until its peers are known.
	for deadline := time.Now().Add(10 * time.Second); replicas > 1 && cannotReplicate(err) &&
		ClusterSize(nc) >= ClusterReplicas && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(100 * time.Millisecond)
		b, err = try()
	}
	if replicas > 1 && cannotReplicate(err) {
		replicas = 1
		b, err = try()
	}
	if err != nil {
		var none T
		return none, nil, fmt.Errorf("bucket %s: %w", stream, err)
	}
	var raised *Raise
	if found > 0 && replicas > found {
		raised = &Raise{Stream: stream, From: found, To: replicas, Servers: ClusterSize(nc)}
	}
	return b, raised, nil
}

// foundStreamReplicas is a stream's replica count as found (0: none yet,
// or no answer in time).
func foundStreamReplicas(ctx context.Context, js jetstream.JetStream, name string) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		return 0
	}
	return s.CachedInfo().Config.Replicas
}
