package telegram_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/gateways/telegram"
)

// botServer is a Bot API of our own for what the emulator cannot show:
// it honours offset (confirming earlier updates, as Telegram does), serves
// getFile and file downloads, and records what the bot sent.
type botServer struct {
	*httptest.Server
	token string

	mu       sync.Mutex
	pending  []pendingUpdate // updates not yet confirmed
	offsets  []int64         // offset of each getUpdates
	sent     []sentMessage
	answered []string // callback answers
	files    []sentFile
	edited   int
	actions  int // sendChatAction calls (answered 500)
}

// sentFile is one sendDocument or sendPhoto upload.
type sentFile struct {
	Method, Field, Name, ChatID string
	Data                        []byte
}

type pendingUpdate struct {
	id        int64
	u         map[string]any
	delivered bool
}

type sentMessage struct {
	ChatID      int64           `json:"chat_id"`
	Text        string          `json:"text"`
	ParseMode   string          `json:"parse_mode"`
	ReplyMarkup json.RawMessage `json:"reply_markup"`
}

const testToken = "123456:secret-token-never-logged"

var photoBytes = []byte("\xff\xd8\xff\xe0 not really a jpeg")

func newBotServer(t *testing.T) *botServer {
	s := &botServer{token: testToken}
	mux := http.NewServeMux()
	mux.HandleFunc("/file/bot"+testToken+"/photos/p1.jpg", func(w http.ResponseWriter, r *http.Request) { w.Write(photoBytes) })
	mux.HandleFunc("/bot"+testToken+"/{method}", s.method)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *botServer) method(w http.ResponseWriter, r *http.Request) {
	if m := r.PathValue("method"); m == "sendDocument" || m == "sendPhoto" {
		field := map[string]string{"sendDocument": "document", "sendPhoto": "photo"}[m]
		f, hdr, err := r.FormFile(field)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"ok":false,"error_code":400,"description":"no file"}`))
			return
		}
		data, _ := io.ReadAll(f)
		s.mu.Lock()
		s.files = append(s.files, sentFile{Method: m, Field: field, Name: hdr.Filename, ChatID: r.FormValue("chat_id"), Data: data})
		s.mu.Unlock()
		w.Write([]byte(`{"ok":true,"result":{"message_id":1}}`))
		return
	}
	var p map[string]json.RawMessage
	json.NewDecoder(r.Body).Decode(&p)
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := func(result any) { json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result}) }
	switch r.PathValue("method") {
	case "getUpdates":
		// As Telegram: an offset confirms the updates delivered before it;
		// the rest (even with lower ids: ids restart after a quiet week)
		// are delivered.
		var offset int64
		json.Unmarshal(p["offset"], &offset)
		s.offsets = append(s.offsets, offset)
		var out []map[string]any
		keep := s.pending[:0]
		for _, u := range s.pending {
			if u.delivered && u.id < offset {
				continue
			}
			u.delivered = true
			keep = append(keep, u)
			out = append(out, u.u)
		}
		s.pending = keep
		ok(out)
	case "sendMessage":
		var m sentMessage
		b, _ := json.Marshal(p)
		json.Unmarshal(b, &m)
		s.sent = append(s.sent, m)
		ok(map[string]any{"message_id": len(s.sent), "chat": map[string]any{"id": m.ChatID}})
	case "sendChatAction":
		s.actions++
		w.WriteHeader(http.StatusInternalServerError) // as telegram-test-api does
		w.Write([]byte(`{"message":"API method 'sendChatAction' is not supported."}`))
	case "getFile":
		ok(map[string]any{"file_id": "f", "file_path": "photos/p1.jpg"})
	case "answerCallbackQuery":
		var text string
		json.Unmarshal(p["text"], &text)
		s.answered = append(s.answered, text)
		ok(true)
	case "editMessageReplyMarkup":
		s.edited++
		ok(true)
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"ok":false,"error_code":404,"description":"Not Found"}`))
	}
}

func (s *botServer) push(u map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, pendingUpdate{id: int64(u["update_id"].(int)), u: u})
}

func textUpdate(id int, chat int64, text string) map[string]any {
	return map[string]any{"update_id": id, "message": map[string]any{
		"message_id": id, "date": 1, "text": text,
		"chat": map[string]any{"id": chat, "type": "private"}, "from": map[string]any{"id": chat, "username": "owner"}}}
}

// sentTo returns the texts sent to chat.
func (s *botServer) sentTo(chat int64) []sentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sentMessage
	for _, m := range s.sent {
		if m.ChatID == chat {
			out = append(out, m)
		}
	}
	return out
}

func (s *botServer) count(chat int64, text string) int {
	n := 0
	for _, m := range s.sentTo(chat) {
		if m.Text == text {
			n++
		}
	}
	return n
}

func startGateway(t *testing.T, c *crew, url string, allowed ...int64) *telegram.Gateway {
	t.Helper()
	g, err := telegram.Start(t.Context(), telegram.Config{
		Token: testToken, APIURL: url, AllowedChatIDs: allowed, Workspace: c.workspace, Home: "/crew-home",
		Log: c.log, Inbound: c.in, Approvals: c.approver, Questions: c.answerer, Logger: c.logger, PollEvery: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func containsToken(s string) bool { return strings.Contains(s, "secret-token") }
