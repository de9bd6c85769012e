package events

import "testing"

// A quiet process gets quietCollections collections, then none until
// the runtime collects on its own again (busy: none of ours), and after
// that a quiet moment gets its collections again.
func TestCollectWhenQuietCollectsAtMostThreeTimesAQuietMoment(t *testing.T) {
	q := quiet{seen: 10}
	cycles := uint64(10)
	var got []bool
	look := func() {
		c := q.collect(cycles)
		got = append(got, c)
		if c {
			cycles++ // our collection
			q.collected(cycles)
		}
	}
	for range 5 { // quiet
		look()
	}
	cycles += 4 // the runtime collects: busy
	look()
	cycles += 1
	look()
	for range 4 { // quiet again
		look()
	}
	want := []bool{true, true, true, false, false, false, false, true, true, true, false}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("look %d: collect %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
}

// A server started with CollectWhenQuiet stops its collector at Close.
func TestServerWithCollectWhenQuietCloses(t *testing.T) {
	s, err := StartServer(ServerConfig{StoreDir: t.TempDir(), Sync: SyncInterval, CollectWhenQuiet: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.quiet == nil {
		t.Fatal("no collector started")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.quiet != nil {
		t.Fatal("the collector was not stopped")
	}
}
