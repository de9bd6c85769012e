package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/refusal"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/scheduler"
	"github.com/my-agent-crew/crew/tools/canvas"
)

// MaxBody is the largest request body accepted (413 beyond).
const MaxBody = 1 << 20

// Receiver is the one door for messages.
type Receiver interface {
	Receive(ctx context.Context, m inbound.Message) (inbound.Accepted, error)
}

// Approver decides approvals by id.
type Approver interface {
	Decide(ctx context.Context, approvalID string, approve, always bool, channel string) (decision string, err error)
}

// Answerer answers questions (ask_user) by id.
type Answerer interface {
	Answer(ctx context.Context, questionID, answer, channel string) error
}

// LiveFeed subscribes to a conversation's display-only deltas; the
// returned func unsubscribes.
type LiveFeed func(conversation string, deliver func(data []byte)) (stop func(), err error)

type inboundRequest struct {
	Text           string   `json:"text"`
	Channel        string   `json:"channel"`
	Agent          string   `json:"agent"`
	ConversationID string   `json:"conversation_id"`
	Attachments    []string `json:"attachments"`
	// Images are uploaded with the message: stored under the agent's
	// workspace/inbox/ and attached, as the web composer's are.
	Images []imageUpload `json:"images"`
}

// imageUpload is one image of an inbound request, its bytes in base64.
type imageUpload struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// maxInboundBody is /api/inbound's body limit: a message and its images
// in base64.
const maxInboundBody = MaxBody + inbound.MaxUploads*(inbound.MaxUpload/3*4+8)

func (s *server) inbound(w http.ResponseWriter, r *http.Request) {
	var req inboundRequest
	body := &countingReader{r: r.Body}
	r.Body = body
	if !decodeBodyUpTo(w, r, &req, maxInboundBody) {
		return
	}
	var ups []inbound.Upload
	rest := body.n
	for _, im := range req.Images {
		ups = append(ups, inbound.Upload{Name: im.Name, Data: im.Data})
		rest -= int64(base64.StdEncoding.EncodedLen(len(im.Data)))
	}
	// Only images may make the body larger than any other request.
	if rest > MaxBody {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("body over %d bytes besides its images", MaxBody))
		return
	}
	acc, err := s.cfg.Inbound.Receive(r.Context(), inbound.Message{
		Text: req.Text, Channel: req.Channel, Agent: req.Agent, ConversationID: req.ConversationID, Attachments: req.Attachments, Uploads: ups,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, acc)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

type decisionRequest struct {
	Decision string `json:"decision"` // "approve" | "deny"
	Always   bool   `json:"always"`
}

func (s *server) decide(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var req decisionRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Decision != "approve" && req.Decision != "deny" {
		writeError(w, http.StatusBadRequest, "bad_request", `decision must be "approve" or "deny"`)
		return
	}
	if req.Always && req.Decision != "approve" {
		writeError(w, http.StatusBadRequest, "bad_request", `"always" goes with "approve" only`)
		return
	}
	decision, err := s.cfg.Approvals.Decide(r.Context(), id, req.Decision == "approve", req.Always, "web")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"approval_id": id, "decision": decision})
}

type answerRequest struct {
	Answer *string `json:"answer"`
}

// answer answers a pending question: 200 with the answer stored, 400 for
// an empty or oversized answer, 404 for an unknown question, 409 when it
// was answered already or has expired.
func (s *server) answer(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var req answerRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Answer == nil {
		writeError(w, http.StatusBadRequest, "bad_request", `want {"answer": "…"}`)
		return
	}
	if err := s.cfg.Questions.Answer(r.Context(), id, *req.Answer, "web"); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"question_id": id, "status": "answered"})
}

// stream is the conversation's SSE feed: stored events with their stream
// sequence as the SSE id (a reconnect with Last-Event-ID resumes exactly),
// and display-only deltas (event "delta", no id).
func (s *server) stream(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("conversation")
	if err := events.ValidID(id); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_id", err.Error())
		return
	}
	from, ok := resumeFrom(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	lossy := make(chan []byte, 256)
	if s.cfg.Live != nil {
		stop, err := s.cfg.Live(id, func(data []byte) {
			select {
			case lossy <- sseFrame("delta", "", data):
			default: // a slow reader misses deltas, never stored events
			}
		})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		defer stop()
	}
	flusher, ok := sseStart(w)
	if !ok {
		return
	}
	stored := make(chan []byte)
	go func() {
		defer cancel()
		for env, err := range s.cfg.Log.Follow(ctx, events.Conv(id).Filter(), from) {
			if err != nil {
				s.logger().Error("sse follow", "conversation", id, "err", err)
				return
			}
			body, _ := json.Marshal(map[string]any{"type": env.Type, "v": env.V, "id": env.ID, "time": env.Time, "seq": env.Seq, "data": env.Data})
			select {
			case stored <- sseFrame(env.Type, strconv.FormatUint(env.Seq, 10), body):
			case <-ctx.Done():
				return
			}
		}
	}()
	pump(ctx, w, flusher, stored, lossy)
}

func sseFrame(event, id string, data []byte) []byte {
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	for _, line := range strings.Split(string(data), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// decodeBody reads one JSON object strictly: unknown fields, trailing data
// and bodies over MaxBody are refused with a JSON error.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	return decodeBodyUpTo(w, r, v, MaxBody)
}

// decodeBodyUpTo is decodeBody with a body limit of its own (a canvas
// version can be larger than any other request).
func decodeBodyUpTo(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON object")
	}
	if err == nil {
		if _, extra := io.Copy(io.Discard, r.Body); extra != nil {
			err = extra
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("body over %d bytes", limit))
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "bad_json", "empty body: want a JSON object")
	default:
		writeError(w, http.StatusBadRequest, "bad_json", "body: "+err.Error())
	}
	return false
}

// fail answers a failed request: a domain error with its status, anything
// else as reply does.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if d := inbound.RetryAfter(err); d > 0 {
		// Not stored, and the sender can tell: it sends again then.
		w.Header().Set("Retry-After", strconv.Itoa(int(d/time.Second)))
	}
	if status, code, ok := statusOf(err); ok {
		writeError(w, status, code, err.Error())
		return
	}
	s.reply(w, r, nil, err)
}

// statusOf maps the domain's sentinel errors to an HTTP status and an
// error code: the one table of the gateway.
func statusOf(err error) (status int, code string, ok bool) {
	for _, m := range []struct {
		target error
		status int
		code   string
	}{
		{inbound.ErrAwaitingApproval, http.StatusConflict, "awaiting_approval"},
		{inbound.ErrAwaitingAnswer, http.StatusConflict, "awaiting_answer"},
		{refusal.ErrUnknownQuestion, http.StatusNotFound, "not_found"},
		{refusal.ErrAlreadyAnswered, http.StatusConflict, "already_answered"},
		{refusal.ErrQuestionExpired, http.StatusConflict, "expired"},
		{refusal.ErrQuestionWithdrawn, http.StatusConflict, "withdrawn"},
		{refusal.ErrNothingRunning, http.StatusConflict, "nothing_running"},
		{refusal.ErrBadScope, http.StatusBadRequest, "bad_scope"},
		{refusal.ErrNoWaiting, http.StatusNotFound, "not_found"},
		{refusal.ErrUnknownTask, http.StatusNotFound, "not_found"},
		{refusal.ErrTaskEnded, http.StatusConflict, "already_finished"},
		{refusal.ErrBadAnswer, http.StatusBadRequest, "bad_request"},
		{inbound.ErrClosed, http.StatusConflict, "closed"},
		{inbound.ErrDelegated, http.StatusConflict, "delegated"},
		{inbound.ErrParked, http.StatusConflict, "parked"},
		{inbound.ErrQueueFull, http.StatusTooManyRequests, "queue_full"},
		{inbound.ErrStoreFull, http.StatusServiceUnavailable, "event_store_full"},
		{inbound.ErrStoreBusy, http.StatusServiceUnavailable, "event_store_busy"},
		{inbound.ErrEmptySteer, http.StatusUnprocessableEntity, "empty_steer"},
		{inbound.ErrBadAttachment, http.StatusUnprocessableEntity, "bad_attachment"},
		{inbound.ErrUploadTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
		{inbound.ErrUnknownConversation, http.StatusNotFound, "not_found"},
		{inbound.ErrUnknownAgent, http.StatusNotFound, "not_found"},
		{inbound.ErrBadMessage, http.StatusBadRequest, "bad_request"},
		{refusal.ErrUnknownApproval, http.StatusNotFound, "not_found"},
		{refusal.ErrApprovalDecided, http.StatusConflict, "already_decided"},
		{refusal.ErrConsolidateUnknownAgent, http.StatusNotFound, "not_found"},
		{refusal.ErrUnknownProposal, http.StatusNotFound, "not_found"},
		{refusal.ErrProposalDecided, http.StatusConflict, "already_decided"},
		{refusal.ErrMemoryChanged, http.StatusConflict, "memory_changed"},
		{refusal.ErrNotApplied, http.StatusConflict, "not_applied"},
		{refusal.ErrNothingToConsolidate, http.StatusUnprocessableEntity, "nothing_to_consolidate"},
		{refusal.ErrConsolidateModel, http.StatusBadGateway, "model_failed"},
		{scheduler.ErrUnknownJob, http.StatusNotFound, "not_found"},
		{scheduler.ErrProfileJob, http.StatusConflict, "refused"},
		{scheduler.ErrCancelled, http.StatusConflict, "refused"},
		{refusal.ErrSummarizeUnknownConversation, http.StatusNotFound, "not_found"},
		{refusal.ErrUnknownConversation, http.StatusNotFound, "not_found"},
		{refusal.ErrNothingToSummarize, http.StatusConflict, "refused"},
		{refusal.ErrNotClosable, http.StatusConflict, "refused"},
		{canvas.ErrNotFound, http.StatusNotFound, "not_found"},
		{canvas.ErrBadRequest, http.StatusBadRequest, "bad_request"},
		{canvas.ErrBadKind, http.StatusUnprocessableEntity, "bad_kind"},
		{canvas.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
		{canvas.ErrStoreFull, http.StatusInsufficientStorage, "store_full"},
		{canvas.ErrNotRendered, http.StatusNotFound, "not_rendered"},
		{canvas.ErrNoSource, http.StatusConflict, "no_source"},
		{canvas.ErrSourceFailed, http.StatusConflict, "source_failed"},
		{canvas.ErrUnavailable, http.StatusServiceUnavailable, "unavailable"},
		{refusal.ErrNoWorktree, http.StatusNotFound, "not_found"},
		{refusal.ErrWorktreeInUse, http.StatusConflict, "in_use"},
		{refusal.ErrWorktreeDirty, http.StatusConflict, "has_changes"},
		{refusal.ErrAmbiguousWorktree, http.StatusConflict, "ambiguous"},
		{refusal.ErrForkRun, http.StatusNotFound, "not_found"},
		{refusal.ErrForkStep, http.StatusBadRequest, "bad_step"},
		{refusal.ErrForkRoute, http.StatusBadRequest, "bad_route"},
		{refusal.ErrForkRefused, http.StatusConflict, "refused"},
		{ErrNotFound, http.StatusNotFound, "not_found"},
		{ErrRefused, http.StatusConflict, "refused"},
	} {
		if errors.Is(err, m.target) {
			return m.status, m.code, true
		}
	}
	return 0, "", false
}
