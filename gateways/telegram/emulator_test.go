package telegram_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/gateways/telegram"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// emulator is telegram-test-api 4.2.1 (npm, pinned in .ci/npm) on loopback.
type emulator struct {
	url   string
	token string
}

func startEmulator(t *testing.T) *emulator {
	t.Helper()
	modules, _ := filepath.Abs(filepath.Join("..", "..", ".ci", "npm", "node_modules"))
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(modules, "telegram-test-api", "package.json")); serr != nil || err != nil {
		if os.Getenv("CREW_REQUIRE_PEERS") == "1" {
			t.Fatalf("telegram-test-api or node missing (%v, %v): .ci/run installs them", serr, err)
		}
		t.Skipf("telegram-test-api or node missing: run .ci/run once (npm install of telegram-test-api)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(node, filepath.Join("testdata", "emulator.js"), modules, strconv.Itoa(port))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-ready:
		url, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
		if !ok {
			t.Fatalf("emulator did not start: %q %s", line, stderr.String())
		}
		return &emulator{url: url, token: "777000:emulator-token"}
	case <-time.After(30 * time.Second):
		t.Fatalf("emulator not ready in 30 s: %s", stderr.String())
	}
	return nil
}

// post calls the emulator's client API (not the Bot API).
func (e *emulator) post(t *testing.T, path string, body any, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(e.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: HTTP %d %s", path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

type botMessage struct {
	MessageID int64 `json:"messageId"`
	Message   struct {
		Text        string `json:"text"`
		ReplyMarkup *struct {
			Rows [][]struct {
				Text string `json:"text"`
				Data string `json:"callback_data"`
			} `json:"inline_keyboard"`
		} `json:"reply_markup"`
	} `json:"message"`
}

func (e *emulator) userFields(chat int64) map[string]any {
	return map[string]any{
		"botToken": e.token, "date": time.Now().Unix(),
		"from": map[string]any{"id": chat, "first_name": "Owner", "username": "owner", "is_bot": false},
		"chat": map[string]any{"id": chat, "first_name": "Owner", "type": "private"},
	}
}

// history is every message the bot sent to the emulator's chats.
func (e *emulator) history(t *testing.T) []botMessage {
	t.Helper()
	var hist struct {
		Result []botMessage `json:"result"`
	}
	e.post(t, "/getUpdatesHistory", map[string]any{"token": e.token}, &hist)
	return hist.Result
}

// say sends text to the bot as chat's user.
func (e *emulator) say(t *testing.T, chat int64, text string) {
	t.Helper()
	m := e.userFields(chat)
	m["text"] = text
	e.post(t, "/sendMessage", m, nil)
}

// TestEmulator drives the gateway through telegram-test-api: a message and
// its answer, an approval card and a button press, and a photo (which the
// emulator cannot serve: getFile is missing, so the user is told).
func TestEmulator(t *testing.T) {
	e := startEmulator(t)
	c := newCrew(t)
	const chat = int64(4242)
	g, err := telegram.Start(t.Context(), telegram.Config{
		Token: e.token, APIURL: e.url, AllowedChatIDs: []int64{chat}, Workspace: c.workspace,
		Log: c.log, Inbound: c.in, Approvals: c.approver, Logger: c.logger, PollEvery: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	var got []botMessage
	await := func(what string, match func(botMessage) bool) botMessage {
		t.Helper()
		var found botMessage
		eventstest.Eventually(t, what, func() bool {
			var r struct {
				Result []botMessage `json:"result"`
			}
			e.post(t, "/getUpdates", map[string]any{"token": e.token, "chatId": chat}, &r)
			got = append(got, r.Result...)
			for _, m := range got {
				if match(m) {
					found = m
					return true
				}
			}
			return false
		})
		return found
	}

	msg := e.userFields(chat)
	msg["text"] = "hello from the emulator"
	e.post(t, "/sendMessage", msg, nil)
	await("the answer", func(m botMessage) bool { return m.Message.Text == "echo: hello from the emulator" })

	msg = e.userFields(chat)
	msg["text"] = "gate the note"
	e.post(t, "/sendMessage", msg, nil)
	card := await("the approval card", func(m botMessage) bool {
		return m.Message.ReplyMarkup != nil && len(m.Message.ReplyMarkup.Rows) == 1
	})
	approve := card.Message.ReplyMarkup.Rows[0][0]
	if approve.Text != "Approve" {
		t.Fatalf("first button %q", approve.Text)
	}
	cb := e.userFields(chat)
	cb["data"] = approve.Data
	cb["message"] = map[string]any{"message_id": card.MessageID, "chat": map[string]any{"id": chat}}
	e.post(t, "/sendCallback", cb, nil)
	await("the decision", func(m botMessage) bool { return m.Message.Text == "Approved." })
	await("the answer after the tool", func(m botMessage) bool { return m.Message.Text == "done after tool" })

	// The buttons were removed from the card.
	var hist struct {
		Result []botMessage `json:"result"`
	}
	e.post(t, "/getUpdatesHistory", map[string]any{"token": e.token}, &hist)
	for _, m := range hist.Result {
		if m.MessageID == card.MessageID && m.Message.ReplyMarkup != nil && len(m.Message.ReplyMarkup.Rows) != 0 {
			t.Errorf("card still has buttons: %+v", m.Message.ReplyMarkup)
		}
	}

	photo := e.userFields(chat)
	photo["caption"] = "look"
	photo["photo"] = []map[string]any{{"file_id": "p1", "width": 10, "height": 10}}
	e.post(t, "/sendMessage", photo, nil)
	await("the photo failure notice", func(m botMessage) bool {
		return strings.HasPrefix(m.Message.Text, "I could not download that photo")
	})
	if containsToken(c.logs.String()) || strings.Contains(c.logs.String(), "emulator-token") {
		t.Error("the token appears in the logs")
	}
}
