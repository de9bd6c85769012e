package events_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// lock is a StoreConfig.Lock that counts its closes.
type lock struct{ closed int }

func (l *lock) Close() error { l.closed++; return nil }

// OpenStore opens a home's log on the embedded server, or on a server at
// Client.URL (here the first store's, listening on 127.0.0.1) with the
// lease bucket and the home's node; each with its projections database;
// Close closes the lock last, and a failed OpenStore closes it too,
// saying what failed.
func TestStoreOnTheEmbeddedServerOrAtAURL(t *testing.T) {
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	la, lb := &lock{}, &lock{}
	dirA := t.TempDir()
	a, err := events.OpenStore(ctx, events.StoreConfig{Dir: dirA, Server: events.ServerConfig{Listen: "127.0.0.1:-1"}, Lock: la, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if la.closed == 0 {
			a.Close()
		}
	})
	if a.Server() == nil || a.Leases() != nil || a.Conn() == nil {
		t.Fatalf("embedded store: server %v, leases %v", a.Server(), a.Leases())
	}
	if _, err := os.Stat(filepath.Join(dirA, "nats")); err != nil {
		t.Errorf("the embedded server's files: %v", err)
	}
	if err := a.DB().Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("x")); return err }); err != nil {
		t.Fatal(err)
	}
	if a.DB().Path() != filepath.Join(dirA, "projections.db") {
		t.Errorf("projections db at %s", a.DB().Path())
	}
	stored, err := a.Log().Append(ctx, events.Conv("c1"), 0, events.MustNew(&events.MessageReceived{Channel: "web", Text: "hello"}))
	if err != nil {
		t.Fatal(err)
	}

	b, err := events.OpenStore(ctx, events.StoreConfig{Dir: t.TempDir(), Client: events.ClientConfig{URL: a.Server().ClientURL()}, Node: "nodeb", Lock: lb, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if b.Server() != nil || b.Leases() == nil || b.Log().Node() != "nodeb" {
		t.Errorf("store at a URL: server %v, leases %v, node %q", b.Server(), b.Leases(), b.Log().Node())
	}
	if last, err := b.Log().Last(ctx, events.Conv("c1").Filter()); err != nil || last != stored[0].Seq {
		t.Errorf("the second store reads %d (%v), want %d", last, err, stored[0].Seq)
	}
	if st := b.Stats(); st != (events.StoreStats{}) {
		t.Errorf("stats %+v before any loss", st)
	}
	if err := b.Close(); err != nil || lb.closed != 1 {
		t.Errorf("close: %v, lock closed %d times", err, lb.closed)
	}

	for _, c := range []struct {
		name string
		cfg  func(dir string) events.StoreConfig
		want string
	}{
		{"no server at the URL", func(dir string) events.StoreConfig {
			return events.StoreConfig{Dir: dir, Client: events.ClientConfig{URL: "nats://u:secret@127.0.0.1:1"}}
		}, "nats.url nats://u:xxxxx@127.0.0.1:1: cannot connect"},
		{"a bad listen address", func(dir string) events.StoreConfig {
			return events.StoreConfig{Dir: dir, Server: events.ServerConfig{Listen: "nowhere"}}
		}, `start nats: listen "nowhere"`},
		{"projections.db a folder", func(dir string) events.StoreConfig {
			if err := os.MkdirAll(filepath.Join(dir, "projections.db"), 0o700); err != nil {
				t.Fatal(err)
			}
			return events.StoreConfig{Dir: dir}
		}, "open projections db: "},
	} {
		l := &lock{}
		cfg := c.cfg(t.TempDir())
		cfg.Lock, cfg.Logger = l, logger
		s, err := events.OpenStore(ctx, cfg)
		if err == nil {
			s.Close()
			t.Errorf("%s: opened", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || l.closed != 1 {
			t.Errorf("%s: %v (lock closed %d times), want %q", c.name, err, l.closed, c.want)
		}
	}
	var none *events.Store // a command that opens no store (ReadOnly)
	if none.Log() != nil || none.DB() != nil || none.Conn() != nil {
		t.Error("a nil store has parts")
	}
	if err := a.Close(); err != nil || la.closed != 1 {
		t.Errorf("close: %v, lock closed %d times", err, la.closed)
	}
}
