package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// The benchmarks run on the production sync mode (always) unless the name
// says interval: that is what an owner pays per event.
func benchLog(b *testing.B, sync string) *events.Log {
	_, log := eventstest.Start(b, eventstest.WithSync(sync))
	return log
}

func benchPayload() *events.MessageReceived {
	return &events.MessageReceived{Channel: "web", Text: "What should I eat before tomorrow's run? Keep it simple."}
}

// BenchmarkAppend is one event through events.Append: envelope, encoding,
// expected-sequence check, dedupe id.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []string{events.SyncAlways, events.SyncInterval} {
		b.Run(sync, func(b *testing.B) {
			log := benchLog(b, sync)
			ctx := context.Background()
			scope := events.Conv("bench")
			var last uint64
			b.ReportAllocs()
			for b.Loop() {
				stored, err := log.Append(ctx, scope, last, events.MustNew(benchPayload()))
				if err != nil {
					b.Fatal(err)
				}
				last = stored[0].Seq
			}
		})
	}
	// What a real home pays: every append is scanned for the home's
	// secrets (R-X-6), which its log's redactor holds.
	b.Run(events.SyncInterval+"_secrets", func(b *testing.B) {
		log := benchLog(b, events.SyncInterval)
		for i, name := range []string{"OPENROUTER_API_KEY", "TELEGRAM_BOT_TOKEN", "CREW_AUDIT_KEY", "CREW_AUTH_TOKEN", "OLLAMA_API_KEY", "SOME_PASSWORD"} {
			log.Redactor().Add(name, fmt.Sprintf("bench-secret-%d-Zq8Xw3rT9vLp2KdN5mYc", i))
		}
		ctx := context.Background()
		scope := events.Conv("bench")
		var last uint64
		b.ReportAllocs()
		for b.Loop() {
			stored, err := log.Append(ctx, scope, last, events.MustNew(benchPayload()))
			if err != nil {
				b.Fatal(err)
			}
			last = stored[0].Seq
		}
	})
}

// BenchmarkAppendDecision is one decision of three events (a model reply,
// its tool call, …), ADR 0005. On the embedded server: events.Append (one
// message at a time) beside a raw atomic batch of the same three on a
// single-replica file stream that allows batches, which the server stages
// in a file store of its own per batch. On a three-node cluster:
// events.Append (one atomic batch) beside three single appends.
func BenchmarkAppendDecision(b *testing.B) {
	decision := func() []events.Envelope {
		return []events.Envelope{events.MustNew(benchPayload()), events.MustNew(benchPayload()), events.MustNew(benchPayload())}
	}
	appendAll := func(b *testing.B, log *events.Log, each bool) {
		ctx := context.Background()
		scope := events.Conv(nuid.Next())
		var last uint64
		for b.Loop() {
			envs := decision()
			if !each {
				stored, err := log.Append(ctx, scope, last, envs...)
				if err != nil {
					b.Fatal(err)
				}
				last = stored[len(stored)-1].Seq
				continue
			}
			for _, env := range envs {
				stored, err := log.Append(ctx, scope, last, env)
				if err != nil {
					b.Fatal(err)
				}
				last = stored[0].Seq
			}
		}
	}
	for _, sync := range []string{events.SyncAlways, events.SyncInterval} {
		b.Run("embedded_"+sync+"/append", func(b *testing.B) { appendAll(b, benchLog(b, sync), false) })
		b.Run("embedded_"+sync+"/raw_atomic_batch", func(b *testing.B) {
			// The server's own sync: the log's fsync (ADR 0008) does not
			// see this stream.
			js := rawJetStream(b, sync == events.SyncAlways)
			ctx := context.Background()
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BATCH", Subjects: []string{"batch.>"},
				Storage: jetstream.FileStorage, AllowAtomicPublish: true}); err != nil {
				b.Fatal(err)
			}
			nc := js.Conn()
			for b.Loop() {
				id := nuid.Next()
				for i, env := range decision() {
					m := nats.NewMsg("batch.conv.bench.message_received")
					m.Data = mustBody(b, env)
					m.Header.Set("Nats-Msg-Id", env.ID)
					m.Header.Set("Nats-Batch-Id", id)
					m.Header.Set("Nats-Batch-Sequence", fmt.Sprint(i+1))
					if i < 2 {
						if err := nc.PublishMsg(m); err != nil {
							b.Fatal(err)
						}
						continue
					}
					m.Header.Set("Nats-Batch-Commit", "1")
					reply, err := nc.RequestMsg(m, 5*time.Second)
					if err != nil {
						b.Fatal(err)
					}
					if strings.Contains(string(reply.Data), `"error"`) {
						b.Fatalf("batch: %s", reply.Data)
					}
				}
			}
		})
	}
	c := eventstest.StartCluster(b, 3)
	nc, err := events.Connect(events.ClientConfig{URL: c.URL()})
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	log, err := events.Open(context.Background(), nc, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cluster/append_batch", func(b *testing.B) { appendAll(b, log, false) })
	b.Run("cluster/append_one_at_a_time", func(b *testing.B) { appendAll(b, log, true) })
}

// BenchmarkRawJetStreamPublish is the baseline: the same bytes published
// with jetstream.Publish and nothing else, on a plain embedded server
// (always: the server's own SyncAlways, an fsync per message).
func BenchmarkRawJetStreamPublish(b *testing.B) {
	for _, sync := range []string{events.SyncAlways, events.SyncInterval} {
		b.Run(sync, func(b *testing.B) {
			js := rawJetStream(b, sync == events.SyncAlways)
			ctx := context.Background()
			body := mustBody(b, events.MustNew(benchPayload()))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := js.Publish(ctx, "crew.conv.bench.message_received", body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// rawJetStream is a nats-server of its own with the CREW stream, fsyncing
// every message itself when syncAlways.
func rawJetStream(b *testing.B, syncAlways bool) jetstream.JetStream {
	ns, err := server.NewServer(&server.Options{JetStream: true, StoreDir: b.TempDir(), DontListen: true, NoSigs: true, SyncAlways: syncAlways})
	if err != nil {
		b.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		b.Fatal("raw server not ready")
	}
	b.Cleanup(ns.Shutdown)
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateStream(context.Background(), events.StreamConfig()); err != nil {
		b.Fatal(err)
	}
	return js
}

func mustBody(b *testing.B, env events.Envelope) []byte {
	b.Helper()
	body, err := jsonMarshal(env)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

const replayEvents = 10_000

// seedConversation stores n events on conversation "long" (and noise on
// others, so the filter matters).
func seedConversation(b *testing.B, log *events.Log, n int) {
	b.Helper()
	ctx := context.Background()
	js := log.JetStream()
	for i := range n {
		env := events.MustNew(&events.MessageReceived{Channel: "web", Text: fmt.Sprintf("message %d with some words in it", i)})
		body := mustBody(b, env)
		subj := "crew.conv.long.message_received"
		if i%4 == 3 {
			subj = "crew.conv.other.message_received"
		}
		if _, err := js.PublishAsync(subj, body); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
	}
}

// BenchmarkReplayConversation reads every event of one conversation through
// events.Log.Read, decoding each envelope.
func BenchmarkReplayConversation(b *testing.B) {
	log := benchLog(b, events.SyncInterval)
	seedConversation(b, log, replayEvents)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, err := range log.Read(ctx, events.Conv("long").Filter(), 0) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != replayEvents*3/4 {
			b.Fatalf("read %d events", n)
		}
	}
	b.ReportMetric(float64(replayEvents*3/4)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkRawOrderedConsumerReplay is the baseline: a raw ordered consumer
// on the same subject, messages not decoded.
func BenchmarkRawOrderedConsumerReplay(b *testing.B) {
	log := benchLog(b, events.SyncInterval)
	seedConversation(b, log, replayEvents)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		cons, err := log.JetStream().OrderedConsumer(ctx, events.StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"crew.conv.long.>"}})
		if err != nil {
			b.Fatal(err)
		}
		it, err := cons.Messages()
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			msg, err := it.Next()
			if err != nil {
				b.Fatal(err)
			}
			n++
			meta, _ := msg.Metadata()
			if meta.NumPending == 0 {
				break
			}
		}
		it.Stop()
		if n != replayEvents*3/4 {
			b.Fatalf("read %d events", n)
		}
	}
	b.ReportMetric(float64(replayEvents*3/4)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func jsonMarshal(env events.Envelope) ([]byte, error) { return json.Marshal(env) }
