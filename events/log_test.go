package events_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/nats-io/nats.go/jetstream"
)

func msg(text string) events.Envelope {
	return events.MustNew(&events.MessageReceived{Channel: "web", Text: text})
}

func TestAppendThenReadReturnsEventsInOrder(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	c1, c2 := events.Conv("c1"), events.Conv("c2")

	got1, err := log.Append(ctx, c1, 0, msg("one"), msg("two"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, c2, 0, msg("other")); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, c1, got1[1].Seq, msg("three")); err != nil {
		t.Fatal(err)
	}

	read, err := log.ReadAll(ctx, c1.Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, env := range read {
		e, err := env.Decode()
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, e.(*events.MessageReceived).Text)
		if env.Subject != "crew.conv.c1.message_received" {
			t.Errorf("subject = %q", env.Subject)
		}
	}
	if fmt.Sprint(texts) != "[one two three]" {
		t.Errorf("texts = %v, want [one two three]", texts)
	}

	// Read from a sequence returns only the tail.
	tail, err := log.ReadAll(ctx, c1.Filter(), read[1].Seq+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tail) != 1 || tail[0].Seq != read[2].Seq {
		t.Errorf("tail = %+v, want only seq %d", tail, read[2].Seq)
	}

	// An empty scope reads as nothing, at once.
	none, err := log.ReadAll(ctx, events.Conv("nobody").Filter(), 0)
	if err != nil || len(none) != 0 {
		t.Errorf("empty scope: %v, %v", none, err)
	}
}

func TestAppendWithStaleExpectationIsConflict(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	c := events.Conv("c1")
	first, err := log.Append(ctx, c, 0, msg("a"))
	if err != nil {
		t.Fatal(err)
	}
	// Another event on another scope moves the stream, not this scope.
	if _, err := log.Append(ctx, events.Conv("c2"), 0, msg("b")); err != nil {
		t.Fatal(err)
	}
	// Expecting an empty scope when it is not → conflict.
	_, err = log.Append(ctx, c, 0, msg("c"))
	if !errors.Is(err, events.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	// The events of another type on the same scope count too.
	run := events.MustNew(&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	if _, err := log.Append(ctx, c, first[0].Seq, run); err != nil {
		t.Fatalf("append with right expectation: %v", err)
	}
	if _, err := log.Append(ctx, c, first[0].Seq, msg("late")); !errors.Is(err, events.ErrConflict) {
		t.Fatalf("append after another type: err = %v, want ErrConflict", err)
	}
	all, _ := log.ReadAll(ctx, c.Filter(), 0)
	if len(all) != 2 {
		t.Errorf("scope has %d events, want 2 (nothing stored on conflict)", len(all))
	}
}

// Pins the nats-server error codes we map to ErrConflict.
func TestWrongLastSequenceErrorCodeOfEmbeddedServer(t *testing.T) {
	_, log := eventstest.Start(t)
	_, err := log.Append(t.Context(), events.Conv("c1"), 7, msg("x"))
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want a wrapped *jetstream.APIError", err)
	}
	if apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Errorf("error code = %d, want %d", apiErr.ErrorCode, jetstream.JSErrCodeStreamWrongLastSequence)
	}
}

func TestSingleWriterRaceHasExactlyOneWinner(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	c := events.Conv("race")
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			_, errs[i] = log.Append(ctx, c, 0, msg(fmt.Sprint("w", i)))
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, events.ErrConflict):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d writers won, want exactly 1", wins)
	}
}

func TestAppendRetryWithSameIDIsStoredOnce(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	env := msg("once")
	if _, err := log.Append(ctx, events.Conv("c"), events.Any, env); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, events.Conv("c"), events.Any, env); err != nil {
		t.Fatal(err)
	}
	all, _ := log.ReadAll(ctx, events.Conv("c").Filter(), 0)
	if len(all) != 1 {
		t.Errorf("stored %d copies, want 1", len(all))
	}
}

func TestLastOfScope(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	c := events.Conv("c")
	if last, err := log.Last(ctx, c.Filter()); err != nil || last != 0 {
		t.Fatalf("Last of empty scope = %d, %v; want 0, nil", last, err)
	}
	stored, _ := log.Append(ctx, c, 0, msg("a"), events.MustNew(&events.RunStarted{RunID: "r", Agent: "master", Trigger: "message"}))
	log.Append(ctx, events.Conv("d"), 0, msg("b"))
	last, err := log.Last(ctx, c.Filter())
	if err != nil || last != stored[1].Seq {
		t.Errorf("Last = %d, %v; want %d", last, err, stored[1].Seq)
	}
}

func TestDecodeUnknownTypeNamesSubjectAndSequence(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	js := log.JetStream()
	body, _ := json.Marshal(map[string]any{"type": "from_the_future", "v": 1, "id": "x1", "time": "2026-11-30T00:00:00Z", "data": map[string]any{}})
	ack, err := js.Publish(ctx, "crew.conv.c1.from_the_future", body)
	if err != nil {
		t.Fatal(err)
	}
	_, err = log.ReadAll(ctx, events.Conv("c1").Filter(), 0)
	var de *events.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, events.ErrUnknownType) {
		t.Fatalf("err = %v, want DecodeError wrapping ErrUnknownType", err)
	}
	if de.Subject != "crew.conv.c1.from_the_future" || de.Seq != ack.Sequence {
		t.Errorf("DecodeError names %s seq %d, want %s seq %d", de.Subject, de.Seq, "crew.conv.c1.from_the_future", ack.Sequence)
	}
}

func TestDecodeNewerVersionFailsLoudly(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	body, _ := json.Marshal(map[string]any{"type": events.TypeMessageReceived, "v": 99, "id": "x2", "time": "2026-11-30T00:00:00Z", "data": map[string]any{"text": "hi"}})
	ack, err := log.JetStream().Publish(ctx, "crew.conv.c9.message_received", body)
	if err != nil {
		t.Fatal(err)
	}
	_, err = log.ReadAll(ctx, events.Conv("c9").Filter(), 0)
	if !errors.Is(err, events.ErrNewerVersion) {
		t.Fatalf("err = %v, want ErrNewerVersion", err)
	}
	want := fmt.Sprintf("decode event crew.conv.c9.message_received seq %d: ", ack.Sequence)
	if got := err.Error(); len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("error %q does not start with %q", got, want)
	}
}

func TestEventsSurviveServerRestart(t *testing.T) {
	dir := t.TempDir()
	srv, log := eventstest.Start(t, eventstest.WithStoreDir(dir), eventstest.WithSync(events.SyncAlways))
	if _, err := log.Append(t.Context(), events.Conv("c"), 0, msg("persisted")); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	_, log2 := eventstest.Start(t, eventstest.WithStoreDir(dir))
	all, err := log2.ReadAll(t.Context(), events.Conv("c").Filter(), 0)
	if err != nil || len(all) != 1 {
		t.Fatalf("after restart: %d events, %v; want 1", len(all), err)
	}
}

func TestValidID(t *testing.T) {
	for _, id := range []string{"c1", "web-20261130", "A_b-9"} {
		if err := events.ValidID(id); err != nil {
			t.Errorf("ValidID(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", "a.b", "a*", "a>", "-x", "a b", "../x", string(make([]byte, 129))} {
		if err := events.ValidID(id); !errors.Is(err, events.ErrInvalidID) {
			t.Errorf("ValidID(%q) = %v, want ErrInvalidID", id, err)
		}
	}
}

// R-ES-8: on a 3-node cluster the log's stream has 3 replicas, an append
// is stored on all of them and survives the loss of the stream's leader.
func TestClusterStreamHasThreeReplicas(t *testing.T) {
	c := eventstest.StartCluster(t, 3)
	nc, err := events.Connect(events.ClientConfig{URL: c.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	log, err := events.Open(t.Context(), nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := events.ClusterSize(nc); got != 3 {
		t.Errorf("cluster size %d, want 3", got)
	}
	info, err := log.Stream().Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream replicas %d, cluster %+v; want 3", info.Config.Replicas, info.Cluster)
	}
	first, err := log.Append(t.Context(), events.Conv("c1"), 0, events.MustNew(&events.MessageReceived{Channel: "web", Text: "one"}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if c.Server(i).Name() == info.Cluster.Leader {
			c.Kill(i)
		}
	}
	var stored []events.Envelope
	eventstest.Eventually(t, "an append after the leader's loss", func() bool {
		stored, err = log.Append(t.Context(), events.Conv("c1"), first[0].Seq, events.MustNew(&events.MessageReceived{Channel: "web", Text: "two"}))
		return err == nil
	})
	all, err := log.ReadAll(t.Context(), events.Conv("c1").Filter(), 0)
	if err != nil || len(all) != 2 || all[1].Seq != stored[0].Seq {
		t.Fatalf("read back %d events (%v), want both", len(all), err)
	}
}

// A server that cannot be reached is refused at once, naming the URL
// without its password.
func TestConnectUnreachableNamesTheURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = events.Connect(events.ClientConfig{URL: "nats://crew:hunter2@" + addr})
	if err == nil || !strings.Contains(err.Error(), "nats://crew:xxxxx@"+addr) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("connect: %v; want the URL named, its password masked", err)
	}
}

// TestAppendRefusesEventOverMaxPayload: an event whose encoding is over
// the connection's max payload — 3 MB of "<" is 18 MB as JSON — is refused
// with ErrTooLarge before anything is sent, and nothing is stored; a
// large event under it is stored.
func TestAppendRefusesEventOverMaxPayload(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	c := events.Conv("big")
	_, err := log.Append(ctx, c, 0, msg(strings.Repeat("<", 3<<20)))
	if !errors.Is(err, events.ErrTooLarge) || !strings.Contains(err.Error(), "bytes encoded") {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if last, err := log.Last(ctx, c.Filter()); err != nil || last != 0 {
		t.Fatalf("stored anyway: last %d %v", last, err)
	}
	if _, err := log.Append(ctx, c, 0, msg(strings.Repeat("a", 3<<20))); err != nil {
		t.Fatalf("3 MB of plain text: %v", err)
	}
}
