package telegram

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/my-agent-crew/crew/events"
)

// botAPI calls Bot API methods. It never puts the token in an error.
type botAPI struct {
	base  string // APIURL + "/bot" + token
	file  string // APIURL + "/file/bot" + token
	hc    *http.Client
	token string
	// secrets redact every text and caption sent (the log's redactor).
	secrets *events.Redactor
}

// apiError is an answer with ok=false (or a non-JSON failure).
type apiError struct {
	Method      string
	Status      int
	Code        int
	Description string
	RetryAfter  int
}

func (e *apiError) Error() string {
	return fmt.Sprintf("telegram %s: HTTP %d: %d %s", e.Method, e.Status, e.Code, e.Description)
}

// call posts params as JSON and decodes the result into out (may be nil).
func (b *botAPI) call(ctx context.Context, method string, params, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram %s: encode: %w", method, err)
	}
	// Every text and caption sent is redacted (R-X-6).
	body = b.secrets.JSON(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/"+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, b.scrub(err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.hc.Do(req)
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, b.scrub(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("telegram %s: read: %w", method, b.scrub(err))
	}
	var env struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || !env.OK {
		e := &apiError{Method: method, Status: resp.StatusCode, Code: env.ErrorCode, Description: env.Description, RetryAfter: env.Parameters.RetryAfter}
		if e.Description == "" {
			e.Description = strings.TrimSpace(string(raw[:min(len(raw), 200)]))
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Result, out); err != nil {
		return fmt.Errorf("telegram %s: decode result: %w", method, err)
	}
	return nil
}

// upload posts fields and one file as multipart/form-data (sendDocument,
// sendPhoto). The fields are redacted like every JSON call's; the file is
// a canvas, redacted when it was stored.
func (b *botAPI) upload(ctx context.Context, method string, fields map[string]string, field, filename string, data []byte) (int64, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range fields {
		if err := mw.WriteField(k, b.secrets.String(v)); err != nil {
			return 0, err
		}
	}
	fw, err := mw.CreateFormFile(field, filename)
	if err != nil {
		return 0, err
	}
	fw.Write(data)
	if err := mw.Close(); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/"+method, &body)
	if err != nil {
		return 0, fmt.Errorf("telegram %s: %w", method, b.scrub(err))
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := b.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("telegram %s: %w", method, b.scrub(err))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var env struct {
		OK          bool   `json:"ok"`
		ErrorCode   int    `json:"error_code"`
		Description string `json:"description"`
		Result      struct {
			MessageID int64 `json:"message_id"`
		} `json:"result"`
		Parameters struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || !env.OK {
		return 0, &apiError{Method: method, Status: resp.StatusCode, Code: env.ErrorCode, RetryAfter: env.Parameters.RetryAfter,
			Description: cmp.Or(env.Description, strings.TrimSpace(string(raw[:min(len(raw), 200)])))}
	}
	return env.Result.MessageID, nil
}

// download fetches a file by the file_path getFile returned.
func (b *botAPI) download(ctx context.Context, path string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.file+"/"+path, nil)
	if err != nil {
		return nil, fmt.Errorf("telegram download: %w", b.scrub(err))
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("telegram download: %w", b.scrub(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("telegram download: HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("telegram download: %w", b.scrub(err))
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("telegram download: file larger than %d bytes", limit)
	}
	return data, nil
}

// scrub drops the URL (which carries the token) from transport errors.
func (b *botAPI) scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if b.token != "" && strings.Contains(err.Error(), b.token) {
		return errors.New(strings.ReplaceAll(err.Error(), b.token, "<token>"))
	}
	return err
}

// Bot API shapes: only the fields the gateway reads.
type (
	update struct {
		UpdateID      int64          `json:"update_id"`
		Message       *message       `json:"message"`
		CallbackQuery *callbackQuery `json:"callback_query"`
	}
	message struct {
		MessageID int64       `json:"message_id"`
		From      *user       `json:"from"`
		Chat      chat        `json:"chat"`
		Text      string      `json:"text"`
		Caption   string      `json:"caption"`
		Photo     []photoSize `json:"photo"`
		// ReplyTo is the message this one replies to (a question's card).
		ReplyTo *message `json:"reply_to_message"`
	}
	user struct {
		ID       int64  `json:"id"`
		Username string `json:"username"`
		First    string `json:"first_name"`
	}
	chat struct {
		ID int64 `json:"id"`
	}
	photoSize struct {
		FileID   string `json:"file_id"`
		Width    int    `json:"width"`
		Height   int    `json:"height"`
		FileSize int64  `json:"file_size"`
	}
	callbackQuery struct {
		ID      string   `json:"id"`
		From    *user    `json:"from"`
		Message *message `json:"message"`
		Data    string   `json:"data"`
	}
	file struct {
		FilePath string `json:"file_path"`
	}
	inlineButton struct {
		Text string `json:"text"`
		Data string `json:"callback_data"`
	}
	inlineKeyboard struct {
		Rows [][]inlineButton `json:"inline_keyboard"`
	}
)
