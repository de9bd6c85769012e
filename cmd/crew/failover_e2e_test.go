package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// failoverModel is the OpenAI-compatible fake both crew processes call.
// It counts the requests for each message (by the ping-NNN marker of its
// last user message), tells the processes apart by their API key, and
// holds the calls of one key until released: those turns are in flight
// when their process is killed.
type failoverModel struct {
	mu       sync.Mutex
	requests map[string]int // marker → requests
	held     []string       // markers whose requests were held
	holdKey  string
	release  chan struct{}
}

var pingMarker = regexp.MustCompile(`ping-\d+`)

func (m *failoverModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	last := req.Messages[len(req.Messages)-1]
	marker := pingMarker.FindString(last.Content)
	m.mu.Lock()
	m.requests[marker]++
	hold := m.holdKey != "" && r.Header.Get("Authorization") == "Bearer "+m.holdKey
	if hold && marker != "" {
		m.held = append(m.held, marker) // a message's turn (not a tick's) in flight
	}
	release := m.release
	m.mu.Unlock()
	if hold {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return // the caller is dead by now: nothing to answer
	}
	answer := "tock"
	if marker != "" {
		answer = "answer " + marker
	}
	b, _ := json.Marshal(answer)
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":%s},"finish_reason":"stop"}]}`+"\n\n", b)
	fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"cost":0.0001}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (m *failoverModel) count(marker string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[marker]
}

func (m *failoverModel) heldNow() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.held...)
}

// post sends one message; accepted is its conversation when the 202 came
// (the message is stored, R-REL-1).
func post(url, text, channel string) (conversation string, accepted bool) {
	b, _ := json.Marshal(map[string]any{"text": text, "channel": channel})
	resp, err := http.Post(url+"/api/inbound", "application/json", bytes.NewReader(b))
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var out struct {
		Conversation string `json:"conversation_id"`
	}
	if resp.StatusCode != http.StatusAccepted || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return "", false
	}
	return out.Conversation, true
}

// R-ES-8, R-X-8, R-REL-2: two crew processes share a 3-node cluster. One
// is SIGKILLed with turns in flight (its model calls hang), then one NATS
// server is stopped; every accepted message is answered exactly once (one
// reply in the log; the model asked once, or twice for a turn the dead
// process had in flight, whose run is then resumed and closed honestly),
// no message is lost, the scheduler fires each tick once across the
// leader's death, and the dead process's budget reservations are settled
// by the survivor.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("the cluster failover test runs for over a minute")
	}
	total := failoverMessages
	c := eventstest.StartCluster(t, 3)
	model := &failoverModel{requests: map[string]int{}, holdKey: "key-a", release: make(chan struct{})}
	api := httptest.NewServer(model)
	defer api.Close()
	var releaseOnce sync.Once
	releaseHeld := func() { releaseOnce.Do(func() { close(model.release) }) }
	defer releaseHeld()

	homes := map[string]string{}
	for _, name := range []string{"a", "b"} {
		home := filepath.Join(t.TempDir(), name)
		if _, _, code := crew(t, home, "init"); code != 0 {
			t.Fatal("init failed")
		}
		setNATSURL(t, home, c.URL())
		f, err := os.OpenFile(filepath.Join(home, "agent.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("schedules:\n  - name: tick\n    cron: \"* * * * *\"\n    prompt: \"tick\"\n")
		f.Close()
		homes[name] = home
	}
	env := func(key string) []string {
		return []string{"MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=" + key, "OPENROUTER_BASE_URL=" + api.URL + "/v1"}
	}
	// a starts first and leads: the scheduler runs there.
	a := startServe(t, homes["a"], env("key-a")...)
	eventstest.Eventually(t, "a to lead the cluster", func() bool { return strings.Contains(a.stderr.String(), "leading the cluster") })
	b := startServe(t, homes["b"], env("key-b")...)

	nc, err := events.Connect(events.ClientConfig{URL: c.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	log, err := events.Open(t.Context(), nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	leases, err := events.OpenLeases(t.Context(), nc)
	if err != nil {
		t.Logf("no lease bucket to read on failure: %v", err)
	}

	var mu sync.Mutex
	accepted := map[string]string{} // marker → conversation
	send := func(from, to int, urls ...string) {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i := from; i < to; i++ {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				marker := fmt.Sprintf("ping-%03d", i)
				if conv, ok := post(urls[i%len(urls)], "please answer "+marker, fmt.Sprintf("api:load%03d", i)); ok {
					mu.Lock()
					accepted[marker] = conv
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}

	// First a third of the messages to both processes; a's calls hang.
	send(0, total/3, a.url, b.url)
	eventstest.Eventually(t, "turns in flight on a", func() bool { return len(model.heldNow()) >= 3 })
	held := model.heldNow()
	inFlight := len(held)
	a.kill9(t)
	killedAt := time.Now()
	releaseHeld()
	// b takes a's conversations over once their leases expire, and leads.
	eventstest.EventuallyWithin(t, time.Minute, "b to lead after a's death", func() bool {
		return strings.Contains(b.stderr.String(), "leading the cluster")
	})
	takeover := time.Since(killedAt)
	eventstest.EventuallyWithin(t, time.Minute, "b to ask again for a's cut turns", func() bool {
		for _, marker := range held {
			if model.count(marker) < 2 {
				return false
			}
		}
		return true
	})
	retaken := time.Since(killedAt)
	// Then one NATS server goes (the stream's leader), and the rest of
	// the messages go to b.
	info, err := log.Stream().Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if s := c.Server(i); s != nil && info.Cluster != nil && s.Name() == info.Cluster.Leader {
			c.Kill(i)
		}
	}
	natsKilled := time.Now()
	send(total/3, total, b.url)
	posted := time.Since(natsKilled)
	mu.Lock()
	if len(accepted) < total*2/3 {
		t.Fatalf("only %d of %d messages accepted", len(accepted), total)
	}
	mu.Unlock()

	// Every accepted message: stored once, answered once.
	type tally struct{ received, replies, done, resumed int }
	var byConv map[string]*tally
	read := func() bool {
		envs, err := log.ReadAll(t.Context(), events.Root+".conv.>", 0)
		if err != nil {
			return false
		}
		byConv = map[string]*tally{}
		for _, env := range envs {
			id := events.ScopeOf(env.Subject).ID()
			tl := byConv[id]
			if tl == nil {
				tl = &tally{}
				byConv[id] = tl
			}
			e, err := env.Decode()
			if err != nil {
				t.Fatalf("%s seq %d: %v", env.Subject, env.Seq, err)
			}
			switch e := e.(type) {
			case *events.MessageReceived:
				tl.received++
			case *events.ModelCalled:
				if e.InTurn() && e.Error == "" && strings.HasPrefix(e.Text, "answer ping-") {
					tl.replies++
				}
			case *events.RunFinished:
				if e.Status == events.RunDone {
					tl.done++
				}
			case *events.RunResumed:
				tl.resumed++
			}
		}
		for _, conv := range accepted {
			if tl := byConv[conv]; tl == nil || tl.done < 1 {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(3 * time.Minute); !read(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			var left []string
			for marker, conv := range accepted {
				if tl := byConv[conv]; tl == nil || tl.done < 1 {
					// What b's projections and the lease bucket say of it: why
					// neither the takeover nor the adoption tick ran it.
					var view map[string]any
					getJSON(t, b.url+"/api/conversations/"+conv, &view)
					holder, held, herr := "", false, error(nil)
					if leases != nil {
						holder, held, herr = leases.Holder(t.Context(), "conv."+conv)
					}
					left = append(left, fmt.Sprintf("%s %s %+v asked %d; on b: status %v queued %v; lease held %v by %q (%v)",
						marker, conv, tl, model.count(marker), view["status"], view["queued"], held, holder, herr))
				}
			}
			t.Fatalf("after 3 minutes %d accepted messages are not answered: %v", len(left), left)
		}
	}
	resumed := 0
	for marker, conv := range accepted {
		tl := byConv[conv]
		if tl.received != 1 || tl.replies != 1 || tl.done != 1 {
			t.Errorf("%s (%s): %d messages, %d replies, %d runs done; want 1 each", marker, conv, tl.received, tl.replies, tl.done)
		}
		switch n := model.count(marker); {
		case n == 1:
		case n == 2 && tl.resumed == 1:
			resumed++ // in flight on a when it died: asked again once, by b
		default:
			t.Errorf("%s: the model was asked %d times (run resumed %d times); want once, or twice for a turn cut by the kill", marker, n, tl.resumed)
		}
	}
	if resumed < inFlight {
		t.Errorf("%d turns were in flight on the killed process, %d were taken over", inFlight, resumed)
	}

	// The scheduler fired each minute once, across the leader's death,
	// and at least once on b.
	eventstest.EventuallyWithin(t, 2*time.Minute, "a tick fired after a's death", func() bool {
		envs, err := log.ReadAll(t.Context(), events.Job("master-tick").Filter(), 0)
		if err != nil {
			return false
		}
		dues := map[time.Time]int{}
		after := false
		for _, env := range envs {
			e, _ := env.Decode()
			if f, ok := e.(*events.JobFired); ok {
				dues[f.Due]++
				if dues[f.Due] > 1 {
					t.Fatalf("the tick due %s fired %d times", f.Due, dues[f.Due])
				}
				after = after || env.Time.After(killedAt)
			}
		}
		return after
	})

	// a's reservations of the hung calls are settled by b, the leader.
	eventstest.EventuallyWithin(t, 2*time.Minute, "the dead process's reservations settled", func() bool {
		var spent struct {
			Open []json.RawMessage `json:"open_reservations"`
		}
		return getJSON(t, b.url+"/api/budget", &spent) == 200 && len(spent.Open) == 0
	})
	t.Logf("%d messages accepted, %d in flight on the killed process and taken over; after the kill b led in %s and had asked again for every cut turn in %s; after the NATS server's loss the %d later messages took %s to post",
		len(accepted), resumed, takeover.Round(100*time.Millisecond), retaken.Round(100*time.Millisecond), total-total/3, posted.Round(100*time.Millisecond))
	b.stop(t)
}
