package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SpillBucket is the object store of the tool outputs the loop cuts and
// the images results carry (tools.Spill), object <conversation>/<file>:
// a conversation another crew process takes over or forks still reads
// them (issue 30 item 4).
const SpillBucket = "crew_spill"

// Objects is a JetStream object store beside the log: named blobs of any
// size (chunked by the server's client), each gone TTL after its write
// when the store has one.
type Objects struct {
	store  jetstream.ObjectStore
	name   string
	raised *Raise
	sync   func() error // after each Put; nil: none
}

// ObjectsStream is the stream the object store bucket keeps its objects
// on.
func ObjectsStream(bucket string) string { return "OBJ_" + bucket }

// OpenObjects creates or opens the object store name (3 replicas on a
// cluster that can place them, one found at fewer raised, as for
// buckets); ttl > 0 is how long an object is kept after its write. sync,
// when set, runs after each Put, before it returns: on the embedded
// server with sync "always", Server.StreamSync(ObjectsStream(name)), so
// an object a stored event names survives a power cut as the event does.
func OpenObjects(ctx context.Context, nc *nats.Conn, name, description string, ttl time.Duration, sync func() error) (*Objects, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", name, err)
	}
	store, raised, err := openReplicated(ctx, nc, js, ObjectsStream(name), func(ctx context.Context, replicas int) (jetstream.ObjectStore, error) {
		return js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: name, Description: description,
			TTL: ttl, Storage: jetstream.FileStorage, Replicas: replicas})
	})
	if err != nil {
		return nil, err
	}
	return &Objects{store: store, name: name, raised: raised, sync: sync}, nil
}

// Name is the object store's name.
func (o *Objects) Name() string { return o.name }

// Raised is the raise of the store's replicas OpenObjects made, nil for
// none.
func (o *Objects) Raised() *Raise { return o.raised }

// Put stores data as name, replacing what was there.
func (o *Objects) Put(ctx context.Context, name string, data []byte) error {
	if _, err := o.store.PutBytes(ctx, name, data); err != nil {
		return fmt.Errorf("object store %s %s: %w", o.name, name, err)
	}
	if o.sync != nil {
		if err := o.sync(); err != nil {
			return fmt.Errorf("object store %s %s: %w", o.name, name, err)
		}
	}
	return nil
}

// Get is name's data; ErrNotFound when there is none (never stored,
// deleted, or its TTL ran out).
func (o *Objects) Get(ctx context.Context, name string) ([]byte, error) {
	b, err := o.store.GetBytes(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("object store %s %s: %w", o.name, name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s %s: %w", o.name, name, err)
	}
	return b, nil
}

// Has says whether name is stored.
func (o *Objects) Has(ctx context.Context, name string) (bool, error) {
	_, err := o.store.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("object store %s %s: %w", o.name, name, err)
	}
	return true, nil
}

// Names are the stored objects' names that begin with prefix, in no
// particular order. It reads every object's description (the store keeps
// no index by prefix): for rare uses, such as a fork's copy.
func (o *Objects) Names(ctx context.Context, prefix string) ([]string, error) {
	infos, err := o.store.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", o.name, err)
	}
	var names []string
	for _, i := range infos {
		if strings.HasPrefix(i.Name, prefix) {
			names = append(names, i.Name)
		}
	}
	return names, nil
}
