package events

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func startSynced(t *testing.T, mode string) (*Server, *Log) {
	t.Helper()
	srv, err := StartServer(ServerConfig{StoreDir: t.TempDir(), Sync: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	log, err := srv.OpenLog(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv, log
}

func received(text string) Envelope { return MustNew(&MessageReceived{Channel: "web", Text: text}) }

// ADR 0008: with sync "always" an append of a decision's events is one
// fsync, a deferred append none (the next durable one covers it), and
// Log.Sync one; with "interval" the log fsyncs nothing.
func TestAppendIsOneFsyncPerDecision(t *testing.T) {
	_, log := startSynced(t, SyncAlways)
	ctx := t.Context()
	rounds := func() uint64 { return log.fsync.rounds.Load() }
	stored, err := log.Append(ctx, Conv("c"), 0, received("a"), received("b"), received("c"))
	if err != nil {
		t.Fatal(err)
	}
	if got := rounds(); got != 1 {
		t.Fatalf("an append of three events made %d fsync rounds, want 1", got)
	}
	stored, err = log.Append(Deferred(ctx), Conv("c"), stored[2].Seq, received("deferred"))
	if err != nil {
		t.Fatal(err)
	}
	if got := rounds(); got != 1 {
		t.Fatalf("a deferred append made an fsync round (%d, want 1)", got)
	}
	if _, err := log.Append(ctx, Conv("c"), stored[0].Seq, received("durable")); err != nil {
		t.Fatal(err)
	}
	if err := log.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rounds(); got != 3 {
		t.Fatalf("an append and a Sync made %d rounds in all, want 3", got)
	}
	if f := log.fsync.f; f == nil || filepath.Base(f.Name()) != "1.blk" || !strings.Contains(f.Name(), filepath.Join("streams", StreamName, "msgs")) {
		t.Fatalf("the rounds synced %v, want the CREW stream's message block 1.blk", f)
	}

	_, plain := startSynced(t, SyncInterval)
	if plain.fsync != nil {
		t.Fatal("a log with sync interval fsyncs appends")
	}
	if _, err := plain.Append(ctx, Conv("c"), 0, received("a")); err != nil {
		t.Fatal(err)
	}
}

// A round syncs every message block written since the last one: deferred
// appends that filled a block and rolled over to the next are synced by
// the next durable append with its own block.
func TestFsyncFollowsTheBlocksTheServerRolledOver(t *testing.T) {
	_, log := startSynced(t, SyncAlways)
	ctx := t.Context()
	if _, err := log.Append(ctx, Conv("c"), Any, received("first")); err != nil {
		t.Fatal(err)
	}
	if log.fsync.block != 1 {
		t.Fatalf("synced block %d, want 1", log.fsync.block)
	}
	big := strings.Repeat("x", 1<<20)
	for range 10 { // the stream's blocks hold 8 MB
		if _, err := log.Append(Deferred(ctx), Conv("c"), Any, received(big)); err != nil {
			t.Fatal(err)
		}
	}
	msgs := filepath.Join(log.fsync.dir, "msgs")
	last, err := lastBlock(msgs)
	if err != nil || last < 2 {
		t.Fatalf("last block %d (%v): the appends did not roll over", last, err)
	}
	if err := log.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if log.fsync.block != last || !log.fsync.dirs {
		t.Fatalf("the round ended on block %d (directories synced %v), want %d", log.fsync.block, log.fsync.dirs, last)
	}
}

// Appends at the same moment share fsync rounds, and each returns after
// a round that began after its events were stored.
func TestConcurrentAppendsShareFsyncRounds(t *testing.T) {
	_, log := startSynced(t, SyncAlways)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := log.Append(context.Background(), Conv("c"+string(rune('a'+i%26))+string(rune('a'+i/26))), Any, received("x"))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := log.fsync.rounds.Load(); got < 1 || got > n {
		t.Fatalf("%d rounds for %d appends", got, n)
	}
}

// A round that finds no message block where the server keeps them fails
// (fails closed: an append would otherwise return undurable).
func TestFsyncWithoutTheStreamsBlocksFails(t *testing.T) {
	s := newStoreSync(t.TempDir())
	if err := s.Sync(); err == nil || !strings.Contains(err.Error(), "no message block") {
		t.Fatalf("Sync = %v, want an error naming the missing blocks", err)
	}
}

// What the log's fsync relies on (ADR 0008): the server has written a
// message into its block file by the time it acknowledges it, so an
// fsync of the file makes it durable. A server that buffered writes past
// the acknowledgement (an async flush) fails this.
func TestServerWritesTheMessageIntoItsBlockBeforeTheAck(t *testing.T) {
	_, log := startSynced(t, SyncAlways)
	env := received("written before the ack")
	if _, err := log.Append(Deferred(t.Context()), Conv("c"), 0, env); err != nil {
		t.Fatal(err)
	}
	msgs := filepath.Join(log.fsync.dir, "msgs")
	last, err := lastBlock(msgs)
	if err != nil || last == 0 {
		t.Fatalf("no block in %s (%v)", msgs, err)
	}
	raw, err := os.ReadFile(blockPath(msgs, last))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(env.ID)) {
		t.Fatalf("the acknowledged event %s is not in %s yet: an fsync of the block would not make it durable", env.ID, blockPath(msgs, last))
	}
}

// ADR 0008: the server may rewrite a message block under its name (a
// compaction writes a temporary file and renames it over N.blk); the next
// round syncs the file the name holds now, not the one it had open.
func TestFsyncFollowsABlockRewrittenUnderItsName(t *testing.T) {
	_, log := startSynced(t, SyncAlways)
	ctx := t.Context()
	stored, err := log.Append(ctx, Conv("c"), 0, received("a"))
	if err != nil {
		t.Fatal(err)
	}
	old := log.fsync.f
	if old == nil {
		t.Fatal("no block held after a durable append")
	}
	name := old.Name()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	// What the server's compaction does: a new file renamed over the name.
	if err := os.WriteFile(name+".tmp", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(name+".tmp", name); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, Conv("c"), stored[0].Seq, received("b")); err != nil {
		t.Fatal(err)
	}
	held, err := log.fsync.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	now, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(held, now) {
		t.Fatal("the round after the rewrite synced the block's old file")
	}
}

// ADR 0008: a failed fsync is not forgotten. The kernel may drop the dirty
// pages of a failed fsync, so a later round's success would not cover the
// events the failed one was for: every later append fails too.
func TestFsyncFailureStays(t *testing.T) {
	_, log := startSynced(t, SyncAlways)
	ctx := t.Context()
	stored, err := log.Append(ctx, Conv("c"), 0, received("a"))
	if err != nil {
		t.Fatal(err)
	}
	dir := log.fsync.dir
	log.fsync.f.Close()
	log.fsync.f, log.fsync.dir = nil, filepath.Join(t.TempDir(), "nowhere")
	if err := log.Sync(ctx); err == nil {
		t.Fatal("a round that found no block succeeded")
	}
	log.fsync.dir = dir
	if _, err := log.Append(ctx, Conv("c"), stored[0].Seq, received("b")); err == nil {
		t.Fatal("an append after a failed fsync was reported durable")
	}
	if err := log.Sync(ctx); err == nil {
		t.Fatal("Sync after a failed fsync succeeded")
	}
}

// An object stored beside the log (a spill a tool_completed names) is as
// durable as the event with sync "always": Objects.Put returns after an
// fsync round of its own stream's blocks (Server.StreamSync); with
// "interval", and on a cluster (no Server), there is none to run.
func TestObjectPutIsFsyncedWithSyncAlways(t *testing.T) {
	srv, _ := startSynced(t, SyncAlways)
	ctx := t.Context()
	stream := ObjectsStream("crew_test_objects")
	o, err := OpenObjects(ctx, srv.Conn(), "crew_test_objects", "test", 0, srv.StreamSync(stream))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Put(ctx, "c1/out.txt", bytes.Repeat([]byte("x"), 300_000)); err != nil { // more than one chunk
		t.Fatal(err)
	}
	ss := srv.streams[stream]
	if ss == nil || ss.rounds.Load() != 1 {
		t.Fatalf("a Put made %v fsync rounds of %s, want 1", ss, stream)
	}
	if f := ss.f; f == nil || !strings.Contains(f.Name(), filepath.Join("streams", stream, "msgs")) {
		t.Fatalf("the round synced %v, want a block of %s", f, stream)
	}
	if got, err := o.Get(ctx, "c1/out.txt"); err != nil || len(got) != 300_000 {
		t.Fatalf("read back %d bytes (%v)", len(got), err)
	}
	if srv.StreamSync(stream) == nil || (*Server)(nil).StreamSync(stream) != nil {
		t.Error("StreamSync: none with sync always, or one without a server")
	}
	plain, _ := startSynced(t, SyncInterval)
	if plain.StreamSync(stream) != nil {
		t.Error("a server with sync interval fsyncs an object store's writes")
	}
}

// A bucket's write (a login, a script's store) is as durable as an event
// with sync "always": Put, Create and Delete return after an fsync round
// of the bucket's own stream (Server.StreamSync(BucketStream(name))).
func TestBucketWritesAreFsyncedWithSyncAlways(t *testing.T) {
	srv, _ := startSynced(t, SyncAlways)
	ctx := t.Context()
	stream := BucketStream("crew_test_bucket")
	b, err := OpenBucket(ctx, srv.Conn(), "crew_test_bucket", "test", srv.StreamSync(stream))
	if err != nil {
		t.Fatal(err)
	}
	ss := srv.streams[stream]
	if ss == nil {
		t.Fatalf("no fsync of %s", stream)
	}
	writes := []func() error{
		func() error { return b.Put(ctx, "a", []byte("1"), 0) },
		func() error { return b.Put(ctx, "b", []byte("2"), time.Hour) },
		func() error { return b.Create(ctx, "c", []byte("3"), 0) },
		func() error { return b.Delete(ctx, "a") },
	}
	for i, w := range writes {
		if err := w(); err != nil {
			t.Fatal(err)
		}
		if got := ss.rounds.Load(); got != uint64(i+1) {
			t.Fatalf("after write %d: %d fsync rounds of %s, want %d", i, got, stream, i+1)
		}
	}
	if f := ss.f; f == nil || !strings.Contains(f.Name(), filepath.Join("streams", stream, "msgs")) {
		t.Fatalf("the rounds synced %v, want a block of %s", f, stream)
	}
	if got, err := b.Get(ctx, "b"); err != nil || string(got) != "2" {
		t.Fatalf("read back %q (%v)", got, err)
	}
}
