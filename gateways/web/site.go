package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/ui"
)

// The HTML site: pages rendered on the server, forms that work without
// JavaScript, and two SSE feeds the small app.js uses to stay live.

// csp allows nothing but this origin: no inline script or style, no CDN.
const csp = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

const csrfCookie = "crew_csrf"

func (s *server) routesSite(mux *router) {
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(ui.Static())))
	mux.HandleFunc("GET /{$}", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
		v, err := s.cfg.Pages.home(r.Context(), csrf)
		return ui.HomePage(v), err
	}))
	mux.HandleFunc("GET /c/{id}", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
		v, err := s.cfg.Pages.conversation(r.Context(), r.PathValue("id"), csrf)
		s.markHit(r.Context(), r, &v)
		return ui.ConversationPage(v), err
	}))
	mux.HandleFunc("GET /c/{id}/live", s.chatLive)
	mux.HandleFunc("GET /c/{id}/fragment", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
		v, err := s.cfg.Pages.conversation(r.Context(), r.PathValue("id"), csrf)
		return ui.ChatFragment(v), err
	}))
	mux.HandleFunc("GET /c/{id}/runs", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
		// The run cards are a projection: shown as of the log now, so a
		// refresh after a stored event shows it (a script's calls, live).
		s.awaitConversation(r.Context(), r.PathValue("id"))
		v, err := s.cfg.Pages.runs(r.Context(), r.PathValue("id"), csrf)
		return ui.RunsPage(v), err
	}))
	mux.HandleFunc("GET /c/{id}/parts/{name}", s.part)
	mux.HandleFunc("GET /fragments/sidebar", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
		sh, err := s.cfg.Pages.shell(r.Context(), "", r.URL.Query().Get("active"), csrf)
		return ui.Sidebar(sh), err
	}))
	mux.HandleFunc("POST /send", s.sendForm)
	mux.HandleFunc("GET /c/{id}/inbox/{name}", s.inboxImage)
	mux.HandleFunc("POST /approvals/{id}/decide", s.form(s.decideForm))
	if s.cfg.Questions != nil {
		mux.HandleFunc("POST /questions/{id}/answer", s.form(s.answerForm))
	}
	mux.HandleFunc("GET /api/activity", s.activity)
	mux.HandleFunc("GET /login", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
		return ui.LoginPage(ui.LoginView{CSRF: csrf}), nil
	}))
	mux.HandleFunc("POST /login", s.form(s.login))
	mux.HandleFunc("POST /logout", s.form(s.logout))
}

// page renders an HTML page with the security headers and a CSRF cookie.
func (s *server) page(build func(r *http.Request, csrf string) (templ.Component, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if id := r.PathValue("id"); id != "" {
			if err := events.ValidID(id); err != nil {
				http.Error(w, "invalid id", http.StatusBadRequest)
				return
			}
		}
		csrf := ensureCSRF(w, r)
		c, err := build(r, csrf)
		if err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, ErrNotFound) {
				status = http.StatusNotFound
			} else {
				s.logger().Error("render", "path", r.URL.Path, "err", err)
			}
			http.Error(w, strings.SplitN(err.Error(), "\n", 2)[0], status)
			return
		}
		htmlHeaders(w)
		if err := c.Render(r.Context(), w); err != nil {
			s.logger().Error("render", "path", r.URL.Path, "err", err)
		}
	}
}

func htmlHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", csp)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Cache-Control", "no-store")
}

// ensureCSRF returns the browser's CSRF token, setting one if missing
// (double-submit: the form field must equal the cookie).
func ensureCSRF(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 64 {
		return c.Value
	}
	b := make([]byte, 32)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return tok
}

// form checks a state-changing form: the CSRF field matching the cookie
// (the origin is checked for every route by guardHost). JavaScript posts
// the same forms with fetch.
func (s *server) form(h func(w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		if err := r.ParseForm(); err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", "form too large or malformed")
			return
		}
		if !csrfOK(w, r) {
			return
		}
		h(w, r)
	}
}

// csrfOK checks the parsed form's CSRF field against the cookie, answering
// 403 when they differ.
func csrfOK(w http.ResponseWriter, r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		writeError(w, http.StatusForbidden, "csrf", "missing or wrong CSRF token: reload the page")
		return false
	}
	return true
}

// wantsJSON: fetch from app.js asks for JSON; a plain form post gets a
// redirect (works without JavaScript).
func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// maxSendBody is /send's body limit as multipart: the form and its images.
const maxSendBody = MaxBody + inbound.MaxUploads*(inbound.MaxUpload+4096)

// sendForm is the composer's post: a plain form, or multipart/form-data
// with images in "image" fields (kept in memory, never in a temp file).
// The CSRF field is checked as for every form, after the body is read.
func (s *server) sendForm(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "multipart/form-data" {
		s.form(s.send)(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSendBody)
	if err := r.ParseMultipartForm(maxSendBody); err != nil {
		if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large",
				fmt.Sprintf("the message with its images is over %d MiB: at most %d images of %d MiB each", maxSendBody>>20, inbound.MaxUploads, inbound.MaxUpload>>20))
			return
		}
		writeError(w, http.StatusBadRequest, "bad_request", "multipart form: "+err.Error())
		return
	}
	if !csrfOK(w, r) {
		return
	}
	s.send(w, r)
}

// formUploads reads the images of a multipart composer post; a file field
// left empty (no file chosen) is none.
func formUploads(r *http.Request) ([]inbound.Upload, error) {
	if r.MultipartForm == nil {
		return nil, nil
	}
	var ups []inbound.Upload
	for _, fh := range r.MultipartForm.File["image"] {
		if fh.Filename == "" && fh.Size == 0 {
			continue
		}
		if fh.Size > inbound.MaxUpload {
			return nil, fmt.Errorf("%w: image %q is %d bytes, over the %d MiB limit", inbound.ErrUploadTooLarge, fh.Filename, fh.Size, inbound.MaxUpload>>20)
		}
		f, err := fh.Open()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(io.LimitReader(f, inbound.MaxUpload+1))
		f.Close()
		if err != nil {
			return nil, err
		}
		ups = append(ups, inbound.Upload{Name: fh.Filename, Data: data})
	}
	return ups, nil
}

func (s *server) send(w http.ResponseWriter, r *http.Request) {
	conv := r.PostFormValue("conversation_id")
	ups, err := formUploads(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	acc, err := s.cfg.Inbound.Receive(r.Context(), inbound.Message{Text: r.PostFormValue("text"), Channel: "web", ConversationID: conv, Uploads: ups})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.awaitConversation(r.Context(), acc.ConversationID)
	if wantsJSON(r) {
		writeJSON(w, http.StatusAccepted, acc)
		return
	}
	http.Redirect(w, r, "/c/"+acc.ConversationID, http.StatusSeeOther)
}

// pagesCaughtUp waits, briefly, until the conversations projection the
// pages read has applied seq. The feeds announce a stored event so that
// the page fetches fresh HTML; announced before the projection had it, the
// page showed the conversation as it was before (a finished run still
// "running"), and no later event came to correct it.
func (s *server) pagesCaughtUp(ctx context.Context, seq uint64) {
	if s.cfg.Pages != nil {
		s.cfg.Pages.caughtUp(ctx, seq)
	}
}

// awaitConversation waits, briefly, until the conversations projection has
// id. A first message opens its conversation in the log, and the
// projection the chat page reads catches up a moment later: sending the
// browser there before that showed "not found" in place of the chat.
func (s *server) awaitConversation(ctx context.Context, id string) {
	if s.cfg.Log == nil {
		return
	}
	if seq, err := s.cfg.Log.Last(ctx, events.Conv(id).Filter()); err == nil {
		s.cfg.Pages.caughtUp(ctx, seq)
	}
}

// decideForm is the approval bar's form: the same Approver as the API.
func (s *server) decideForm(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := events.ValidID(id); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_id", err.Error())
		return
	}
	var approve, always bool
	switch r.PostFormValue("decision") {
	case "approve":
		approve = true
	case "always":
		approve, always = true, true
	case "deny":
	default:
		writeError(w, http.StatusBadRequest, "bad_request", `decision must be approve, always or deny`)
		return
	}
	decision, err := s.cfg.Approvals.Decide(r.Context(), id, approve, always, "web")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if wantsJSON(r) {
		writeJSON(w, http.StatusOK, map[string]string{"approval_id": id, "decision": decision})
		return
	}
	back := r.PostFormValue("back")
	if !strings.HasPrefix(back, "/c/") || strings.Contains(back, "//") {
		back = "/"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// answerForm is the question box's form: the same Answerer as the API. A
// choice button sends choice; the text field sends text.
func (s *server) answerForm(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := events.ValidID(id); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_id", err.Error())
		return
	}
	answer := r.PostFormValue("choice")
	if answer == "" {
		answer = r.PostFormValue("text")
	}
	if err := s.cfg.Questions.Answer(r.Context(), id, answer, "web"); err != nil {
		s.fail(w, r, err)
		return
	}
	if wantsJSON(r) {
		writeJSON(w, http.StatusOK, map[string]string{"question_id": id, "status": "answered"})
		return
	}
	back := r.PostFormValue("back")
	if !strings.HasPrefix(back, "/c/") || strings.Contains(back, "//") {
		back = "/"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// activityTypes are the events every open tab hears about (R-OBS-1).
var activityTypes = map[string]bool{
	events.TypeConversationOpened: true, events.TypeConversationClosed: true, events.TypeMessageReceived: true,
	events.TypeRunStarted: true, events.TypeRunFinished: true, events.TypeRunStopRequested: true,
	events.TypeApprovalRequested: true, events.TypeApprovalDecided: true,
	events.TypeQuestionAsked: true, events.TypeQuestionAnswered: true, events.TypeQuestionExpired: true,
}

// activity is the one live feed for every tab: new conversations, run
// status changes and approvals of all conversations, with the stream
// sequence as SSE id so a reconnect resumes without gaps or duplicates.
func (s *server) activity(w http.ResponseWriter, r *http.Request) {
	from, ok := resumeFrom(w, r)
	if !ok {
		return
	}
	if from == 0 {
		last, err := s.cfg.Log.Last(r.Context(), events.Root+".>")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		from = last + 1
	}
	flusher, ok := sseStart(w)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	frames := make(chan []byte)
	go func() {
		defer cancel()
		for env, err := range s.cfg.Log.Follow(ctx, events.Root+".>", from) {
			if err != nil {
				return
			}
			var body []byte
			typ := env.Type
			switch scope := events.ScopeOf(env.Subject); {
			case scope.Kind() == "canvas":
				s.pagesCaughtUp(ctx, env.Seq)
				body = canvasActivity(env, scope.ID())
			case scope.Kind() == "job" || scope.Kind() == "tg":
				// Jobs and Telegram messages given up (issue 28): a
				// job_completed goes out as job_failed or job_skipped when
				// it ended so.
				item, ok, err := projections.ActivityOf(env)
				if err != nil || !ok {
					continue
				}
				s.pagesCaughtUp(ctx, env.Seq)
				typ = item.Type
				body, _ = json.Marshal(map[string]any{"type": item.Type, "seq": env.Seq, "job": item.Job, "bot": map[bool]string{true: scope.ID()}[scope.Kind() == "tg"],
					"conversation": item.Conversation, "text": item.Text, "data": env.Data})
			case scope.Kind() != "conv" || !activityTypes[env.Type]:
				continue
			default:
				s.pagesCaughtUp(ctx, env.Seq)
				body, _ = json.Marshal(map[string]any{"type": env.Type, "seq": env.Seq, "conversation": scope.ID(), "data": env.Data})
			}
			if body == nil {
				continue
			}
			select {
			case frames <- sseFrame(typ, strconv.FormatUint(env.Seq, 10), body):
			case <-ctx.Done():
				return
			}
		}
	}()
	pump(ctx, w, flusher, frames, nil)
}

// resumeFrom reads where a feed starts: Last-Event-ID (a reconnect) or
// ?after=N (the page's sequence), both meaning "after this event".
func resumeFrom(w http.ResponseWriter, r *http.Request) (uint64, bool) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "Last-Event-ID / after must be a stream sequence")
		return 0, false
	}
	return n + 1, true
}

func sseStart(w http.ResponseWriter) (http.Flusher, bool) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return nil, false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(": live\n\n"))
	flusher.Flush()
	return flusher, true
}

// pump writes frames from the channels until the client leaves, with a
// keepalive comment every 15 s.
func pump(ctx context.Context, w http.ResponseWriter, flusher http.Flusher, stored, lossy <-chan []byte) {
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		var frame []byte
		select {
		case <-ctx.Done():
			return
		case frame = <-stored:
		case frame = <-lossy:
		case <-keepalive.C:
			frame = []byte(": keepalive\n\n")
		}
		if _, err := w.Write(frame); err != nil {
			return
		}
		flusher.Flush()
	}
}
