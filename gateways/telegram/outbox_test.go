package telegram_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/telegram"
)

// failingFront stands in front of telegram-test-api and answers the next
// sendMessage calls with the failures queued, passing the rest through.
type failingFront struct {
	*httptest.Server
	mu       sync.Mutex
	failures []func(http.ResponseWriter)
	attempts []time.Time // every sendMessage that reached the front
}

func newFailingFront(t *testing.T, emulator string) *failingFront {
	target, _ := url.Parse(emulator)
	proxy := httputil.NewSingleHostReverseProxy(target)
	f := &failingFront{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/sendMessage") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			f.mu.Lock()
			f.attempts = append(f.attempts, time.Now())
			var fail func(http.ResponseWriter)
			if len(f.failures) > 0 {
				fail, f.failures = f.failures[0], f.failures[1:]
			}
			f.mu.Unlock()
			if fail != nil {
				fail(w)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *failingFront) fail(n int, fail func(http.ResponseWriter)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.failures = append(f.failures, fail)
	}
}

func (f *failingFront) sends() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.attempts...)
}

func answer(status int, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func (e *emulator) countText(t *testing.T, text string) int {
	n := 0
	for _, m := range e.history(t) {
		if m.Message.Text == text {
			n++
		}
	}
	return n
}

func (e *emulator) awaitText(t *testing.T, text string) {
	t.Helper()
	eventstest.Eventually(t, "the chat gets "+text, func() bool { return e.countText(t, text) > 0 })
}

func startOutboxGateway(t *testing.T, c *crew, e *emulator, api string, chat int64) *telegram.Gateway {
	t.Helper()
	g, err := telegram.Start(t.Context(), telegram.Config{
		Token: e.token, APIURL: api, AllowedChatIDs: []int64{chat}, Workspace: c.workspace,
		Log: c.log, Inbound: c.in, Approvals: c.approver, Questions: c.answerer,
		Logger: c.logger, PollEvery: 50 * time.Millisecond, RetryMin: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// R-TG, issue 28: a reply produced while the gateway is stopped (a
// restart, an outage of ours) is delivered when it starts, once.
func TestTelegramReplyProducedWhileStoppedIsDeliveredAfterStart(t *testing.T) {
	e := startEmulator(t)
	c := newCrew(t)
	const chat = int64(7101)
	g := startOutboxGateway(t, c, e, e.url, chat)
	msg := e.userFields(chat)
	msg["text"] = "before the stop"
	e.post(t, "/sendMessage", msg, nil)
	e.awaitText(t, "echo: before the stop")
	g.Close()

	// The owner's message reached the crew another way while the gateway
	// was down (the web, or the poller of before the stop): the run
	// finishes with nobody sending.
	acc, err := c.in.Receive(t.Context(), inbound.Message{Text: "while you were away", Channel: "telegram:7101"})
	if err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, "the run finished while stopped", func() bool {
		envs, _ := c.log.ReadAll(t.Context(), events.Conv(acc.ConversationID).Subject(events.TypeRunFinished), 0)
		return len(envs) == 2
	})
	if n := e.countText(t, "echo: while you were away"); n != 0 {
		t.Fatalf("sent %d times while the gateway was stopped", n)
	}
	g = startOutboxGateway(t, c, e, e.url, chat)
	defer g.Close()
	e.awaitText(t, "echo: while you were away")
	// A later message still goes, and nothing went twice.
	msg = e.userFields(chat)
	msg["text"] = "after the start"
	e.post(t, "/sendMessage", msg, nil)
	e.awaitText(t, "echo: after the start")
	for _, text := range []string{"echo: before the stop", "echo: while you were away", "echo: after the start"} {
		if n := e.countText(t, text); n != 1 {
			t.Errorf("%q sent %d times, want once", text, n)
		}
	}
}

// R-TG, issue 28: a 429 with retry_after, then three 502s, are ridden out:
// the reply arrives once, the retry_after honoured; the messages after it
// keep their order.
func TestTelegramOutboxRidesOut429And502s(t *testing.T) {
	e := startEmulator(t)
	c := newCrew(t)
	const chat = int64(7102)
	front := newFailingFront(t, e.url)
	g := startOutboxGateway(t, c, e, front.URL, chat)
	defer g.Close()

	front.fail(1, answer(429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 1","parameters":{"retry_after":1}}`))
	front.fail(3, answer(502, "<html>502 Bad Gateway</html>"))
	for i, text := range []string{"first", "second"} {
		msg := e.userFields(chat)
		msg["text"] = text
		e.post(t, "/sendMessage", msg, nil)
		// Each its own turn (messages waiting together are answered
		// together): "second" goes once "first" is answered, while that
		// answer is still held up in the outbox by the 429 and the 502s.
		eventstest.Eventually(t, fmt.Sprintf("run %d finished", i+1), func() bool {
			envs, _ := c.log.ReadAll(t.Context(), events.Root+".conv.*."+events.TypeRunFinished, 0)
			return len(envs) > i
		})
	}
	e.awaitText(t, "echo: second")
	var order []string
	for _, m := range e.history(t) {
		if strings.HasPrefix(m.Message.Text, "echo: ") || strings.HasPrefix(m.Message.Text, "queued") {
			order = append(order, m.Message.Text)
		}
	}
	if n := e.countText(t, "echo: first"); n != 1 {
		t.Fatalf("echo: first sent %d times, want once (history %q)", n, order)
	}
	if i, j := indexOf(order, "echo: first"), indexOf(order, "echo: second"); i < 0 || j < i {
		t.Errorf("out of order: %q", order)
	}
	sends := front.sends()
	if len(sends) < 5 {
		t.Fatalf("%d sendMessage calls, want the 429, three 502s and the success at least", len(sends))
	}
	if gap := sends[1].Sub(sends[0]); gap < 900*time.Millisecond {
		t.Errorf("retried %v after a 429 with retry_after 1", gap)
	}
	// Every attempt's failure is in the log once per change of error, not
	// once per attempt.
	if n := strings.Count(c.logs.String(), "502 Bad Gateway"); n != 1 {
		t.Errorf("the 502 logged %d times, want once:\n%s", n, c.logs.String())
	}
}

// R-TG, issue 28: a 4xx saying the chat is gone gives the message up
// (telegram_send_failed, chat_gone), and the chat's next message is sent.
func TestTelegramOutboxGivesUpOnlyWhenTheChatIsGone(t *testing.T) {
	e := startEmulator(t)
	c := newCrew(t)
	const chat = int64(7103)
	front := newFailingFront(t, e.url)
	g := startOutboxGateway(t, c, e, front.URL, chat)
	defer g.Close()

	front.fail(1, answer(403, `{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}`))
	msg := e.userFields(chat)
	msg["text"] = "blocked"
	e.post(t, "/sendMessage", msg, nil)
	var failed *events.TelegramSendFailed
	eventstest.Eventually(t, "telegram_send_failed stored", func() bool {
		envs, _ := c.log.ReadAll(t.Context(), events.Root+".tg.*."+events.TypeTelegramSendFailed, 0)
		if len(envs) == 0 {
			return false
		}
		d, _ := envs[0].Decode()
		failed = d.(*events.TelegramSendFailed)
		return true
	})
	if !failed.ChatGone || failed.Status != 403 || failed.Chat != chat || !strings.Contains(failed.Error, "blocked") {
		t.Errorf("failed = %+v", failed)
	}
	msg = e.userFields(chat)
	msg["text"] = "unblocked"
	e.post(t, "/sendMessage", msg, nil)
	e.awaitText(t, "echo: unblocked")
	if n := e.countText(t, "echo: blocked"); n != 0 {
		t.Errorf("the given-up message was sent %d times", n)
	}
}

// R-TG, issue 28 item 2: while a question waits in the chat, the owner's
// next plain message answers it, and /status lists it by its text.
func TestTelegramPlainMessageAnswersTheWaitingQuestion(t *testing.T) {
	e := startEmulator(t)
	c := newCrew(t)
	const chat = int64(7104)
	g, err := telegram.Start(t.Context(), telegram.Config{
		Token: e.token, APIURL: e.url, AllowedChatIDs: []int64{chat}, Workspace: c.workspace,
		Log: c.log, DB: c.db, Inbound: c.in, Approvals: c.approver, Questions: c.answerer,
		Logger: c.logger, PollEvery: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	acc, err := c.in.Receive(t.Context(), inbound.Message{Text: "ask", Channel: "web"})
	if err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, "the question's card in the chat", func() bool {
		for _, m := range e.history(t) {
			if strings.HasPrefix(m.Message.Text, "Question: Which day?") {
				return true
			}
		}
		return false
	})
	// The card is tracked once its telegram_sent is stored.
	eventstest.Eventually(t, "the card's copy stored", func() bool { return len(c.cardCopies(t)) == 1 })
	status := e.userFields(chat)
	status["text"] = "/status"
	e.post(t, "/sendMessage", status, nil)
	eventstest.Eventually(t, "/status lists the question", func() bool {
		for _, m := range e.history(t) {
			if strings.HasPrefix(m.Message.Text, "Running:") && strings.Contains(m.Message.Text, "Questions waiting for your answer") &&
				strings.Contains(m.Message.Text, "- Which day?") {
				return true
			}
		}
		return false
	})
	plain := e.userFields(chat)
	plain["text"] = "Thursday please"
	e.post(t, "/sendMessage", plain, nil)
	eventstest.Eventually(t, "the plain message answered the question", func() bool {
		envs, _ := c.log.ReadAll(t.Context(), events.Conv(acc.ConversationID).Subject(events.TypeQuestionAnswered), 0)
		if len(envs) != 1 {
			return false
		}
		d, _ := envs[0].Decode()
		a := d.(*events.QuestionAnswered)
		return a.Answer == "Thursday please" && a.Channel == "telegram:7104"
	})
	// It was an answer, not a message of the chat's own conversation.
	if n := e.countText(t, "echo: Thursday please"); n != 0 {
		t.Errorf("the answer was also taken as a message (%d echoes)", n)
	}
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// Issue 28: the outbox keeps a low-water mark (telegram_outbox_position
// settled), so a start reads only what follows the last start or clean
// stop: after 12 replies delivered, a restart reads a handful of outbox
// events, not the 12 wanted and 12 sent ones, sends none of them again and
// delivers the next reply.
func TestTelegramOutboxStartReadsOnlyAfterItsLowWaterMark(t *testing.T) {
	e := startEmulator(t)
	c := newCrew(t)
	const chat = int64(7104)
	g := startOutboxGateway(t, c, e, e.url, chat)
	const n = 12
	for i := range n {
		msg := e.userFields(chat)
		msg["text"] = fmt.Sprintf("message %d", i)
		e.post(t, "/sendMessage", msg, nil)
		e.awaitText(t, fmt.Sprintf("echo: message %d", i))
	}
	g.Close()
	g = startOutboxGateway(t, c, e, e.url, chat)
	defer g.Close()
	if read := g.OutboxRead(); read > 4 {
		t.Errorf("the start read %d outbox events, want only those after the mark (at most 4), not the %d of the delivered replies", read, 2*n)
	}
	msg := e.userFields(chat)
	msg["text"] = "after the restart"
	e.post(t, "/sendMessage", msg, nil)
	e.awaitText(t, "echo: after the restart")
	for i := range n {
		if k := e.countText(t, fmt.Sprintf("echo: message %d", i)); k != 1 {
			t.Errorf("reply %d sent %d times, want once", i, k)
		}
	}
}
