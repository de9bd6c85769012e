// Package web is the web side of crew serve: the site (chat, runs, jobs,
// memory and approval pages, templ components from ui) and the HTTP API
// (health, conversations, runs, exports, jobs, memory, approvals, inbound
// messages and SSE feeds). API errors are JSON {"error":{"code","message"}}
// mapped in one place (writeError).
// Domain types become ui views here (Memory, SchedulerJobs, Crew,
// ProjectionViews), and domain errors HTTP statuses in one table
// (statusOf). Client is the CLI's side of the same API.
package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/search"
	"github.com/my-agent-crew/crew/tools/mcp"
	"github.com/my-agent-crew/crew/ui"
)

// Health reports whether the server is ready to answer: the log is open and
// the projections have caught up with it. Details is shown as JSON.
type Health func(ctx context.Context) (ready bool, details any)

// CatchingUp reports whether the projections are still catching up with
// the log the server started on, and how many events they have left.
type CatchingUp func(ctx context.Context) (left uint64, catchingUp bool)

// Views are the read models the API serves.
type Views interface {
	Conversations(ctx context.Context, limit int) (any, error)
	Conversation(ctx context.Context, id string) (any, error) // ErrNotFound when unknown
	Runs(ctx context.Context, conversation string) (any, error)
	Run(ctx context.Context, id string) (projections.Run, error) // ErrNotFound when unknown
}

// ErrNotFound is returned by Views for unknown ids.
var ErrNotFound = errors.New("not found")

// Config wires the API.
type Config struct {
	Log    *events.Log
	Views  Views
	Health Health
	// CatchingUp, when set, makes /healthz answer 503 {"status":
	// "catching_up","lag":N} and every page show "catching up: N events
	// left" while the projections catch up (the server answers from its
	// first moment; inbound is stored and answered once they are done).
	CatchingUp CatchingUp
	// AuthToken, when set, is required on every request but /healthz,
	// /login and /static/, as "Authorization: Bearer <token>" or the
	// session cookie /login sets.
	AuthToken string
	// Hosts are names (or name:port) the server answers to besides
	// 127.0.0.1, localhost and [::1] on its port; only with AuthToken.
	Hosts []string
	// Sessions holds login sessions; nil keeps them in memory.
	Sessions *Sessions
	// AuditKey keys the hash chain of exports (events.WriteExport).
	AuditKey []byte
	// Clock times login throttling; nil is time.Now.
	Clock  func() time.Time
	Logger *slog.Logger
	// Inbound, Approvals and Live serve the write and live endpoints.
	Inbound   Receiver
	Approvals Approver
	// Questions answers ask_user questions; nil leaves POST
	// /api/questions/{id} out.
	Questions Answerer
	Live      LiveFeed
	// Pages serves the HTML site; nil serves the API only.
	Pages *Pages
	// Jobs serves /api/jobs; nil leaves it out.
	Jobs Jobs
	// Memory serves /api/memory/… and /memory; nil leaves them out.
	Memory MemoryService
	// Conversations summarizes and closes conversations; nil leaves the
	// endpoints out.
	Conversations ConversationOps
	// Usage serves /api/usage and /usage; nil leaves them out.
	Usage *Usage
	// Canvas serves /api/artifacts and the conversations' open canvas;
	// nil leaves them out.
	Canvas *CanvasAPI
	// Teams serves /api/teams/{id} and the team pages; nil leaves them out.
	Teams Teams
	// Forks serves POST /api/runs/{id}/fork and the runs page's fork
	// form; nil leaves them out.
	Forks Forker
	// Stops serves the owner's stop: POST /api/conversations/{id}/stop,
	// POST /api/stop and the chat page's Stop forms; nil leaves them out.
	Stops Stopper
	// Tasks serves GET /api/conversations/{id}/tasks and POST
	// /api/tasks/{id}/stop (background tasks); nil leaves them out.
	Tasks TaskStopper
	// Search serves GET /api/search and /search (the recall index); nil
	// leaves them out.
	Search *search.Index
	// MCP lists the MCP servers' states for GET /api/mcp (never reaching
	// them); nil leaves it out.
	MCP func() []mcp.State
	// MCPEndpoint serves /mcp, the crew as an MCP server (streamable
	// HTTP, its own bearer check on every request); nil leaves it out.
	MCPEndpoint http.Handler
}

// Jobs lists scheduled jobs, runs one now, cancels a chat job.
type Jobs interface {
	List(ctx context.Context) (any, error)
	Rows(ctx context.Context) ([]ui.JobRow, error)
	RunNow(ctx context.Context, id string) error // scheduler.ErrUnknownJob, ErrCancelled
	Cancel(ctx context.Context, id string) error // scheduler.ErrUnknownJob, ErrProfileJob, ErrCancelled
	// SetEnabled writes enabled: into the schedule's agent.yaml
	// (scheduler.ErrUnknownJob for a chat job or none).
	SetEnabled(ctx context.Context, id string, on bool) error
}

// ErrRefused is a request the server understood and will not do (409).
var ErrRefused = errors.New("refused")

// New returns the API handler.
func New(cfg Config) http.Handler {
	if cfg.Sessions == nil {
		cfg.Sessions = NewSessions()
	}
	th := newThrottle()
	if cfg.Clock != nil {
		th.now = cfg.Clock
	}
	s := &server{cfg: cfg, throttle: th}
	return s.guardHost(s.authenticate(apiCSRF(s.routes())))
}

// routes registers every route on a router.
func (s *server) routes() *router {
	cfg := s.cfg
	mux := newRouter()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /api/conversations", s.listConversations)
	mux.HandleFunc("GET /api/conversations/{id}", s.getConversation)
	mux.HandleFunc("GET /api/conversations/{id}/runs", s.listRuns)
	mux.HandleFunc("GET /api/conversations/{id}/export", s.export)
	mux.HandleFunc("GET /api/runs/{id}", s.getRun)
	mux.HandleFunc("GET /api/runs/{id}/recorded", s.recorded)
	if cfg.Inbound != nil {
		mux.HandleFunc("POST /api/inbound", s.inbound)
	}
	if cfg.Approvals != nil {
		mux.HandleFunc("POST /api/approvals/{id}", s.decide)
	}
	if cfg.Questions != nil {
		mux.HandleFunc("POST /api/questions/{id}", s.answer)
	}
	mux.HandleFunc("GET /api/stream", s.stream)
	if cfg.MCPEndpoint != nil {
		mux.Handle("/mcp", cfg.MCPEndpoint)
	}
	if cfg.MCP != nil {
		mux.HandleFunc("GET /api/mcp", func(w http.ResponseWriter, r *http.Request) {
			servers := cfg.MCP()
			if servers == nil {
				servers = []mcp.State{}
			}
			s.reply(w, r, map[string]any{"servers": servers}, nil)
		})
	}
	if cfg.Teams != nil {
		s.routesTeams(mux)
	}
	if cfg.Forks != nil {
		s.routesFork(mux)
	}
	if cfg.Pages != nil {
		cfg.Pages.SignOut = cfg.AuthToken != ""
		cfg.Pages.Forking = cfg.Forks != nil
		if cfg.Pages.Log == nil {
			cfg.Pages.Log = cfg.Log
		}
		if cfg.Pages.CatchingUp == nil {
			cfg.Pages.CatchingUp = cfg.CatchingUp
		}
		if cfg.Pages.MCP == nil {
			cfg.Pages.MCP = cfg.MCP
		}
		s.routesSite(mux)
	}
	if cfg.Jobs != nil {
		mux.HandleFunc("GET /api/jobs", func(w http.ResponseWriter, r *http.Request) {
			v, err := cfg.Jobs.List(r.Context())
			s.reply(w, r, v, err)
		})
		mux.HandleFunc("POST /api/jobs/{id}/run", func(w http.ResponseWriter, r *http.Request) {
			id, ok := pathID(w, r)
			if !ok {
				return
			}
			if err := cfg.Jobs.RunNow(r.Context(), id); err != nil {
				s.fail(w, r, err)
				return
			}
			writeJSON(w, http.StatusAccepted, map[string]string{"job_id": id, "status": "fired"})
		})
		mux.HandleFunc("POST /api/jobs/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
			id, ok := pathID(w, r)
			if !ok {
				return
			}
			if err := cfg.Jobs.Cancel(r.Context(), id); err != nil {
				s.fail(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, map[string]string{"job_id": id, "status": "cancelled"})
		})
		mux.HandleFunc("POST /api/jobs/{id}/enabled", func(w http.ResponseWriter, r *http.Request) {
			id, ok := pathID(w, r)
			if !ok {
				return
			}
			var body struct {
				Enabled *bool `json:"enabled"`
			}
			if !decodeBody(w, r, &body) {
				return
			}
			if body.Enabled == nil {
				writeError(w, http.StatusBadRequest, "bad_request", `want {"enabled": true|false}`)
				return
			}
			if err := cfg.Jobs.SetEnabled(r.Context(), id, *body.Enabled); err != nil {
				s.fail(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"job_id": id, "enabled": *body.Enabled})
		})
		if cfg.Pages != nil {
			mux.HandleFunc("GET /jobs", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
				sh, err := cfg.Pages.shell(r.Context(), "Scheduled jobs", "", csrf)
				if err != nil {
					return nil, err
				}
				rows, err := cfg.Jobs.Rows(r.Context())
				return ui.JobsPage(ui.JobsView{Shell: sh, Jobs: rows}), err
			}))
			jobForm := func(act func(ctx context.Context, id string) error) http.HandlerFunc {
				return s.form(func(w http.ResponseWriter, r *http.Request) {
					id := r.PathValue("id")
					if err := events.ValidID(id); err != nil {
						writeError(w, http.StatusBadRequest, "invalid_id", err.Error())
						return
					}
					if err := act(r.Context(), id); err != nil {
						s.fail(w, r, err)
						return
					}
					http.Redirect(w, r, "/jobs", http.StatusSeeOther)
				})
			}
			mux.HandleFunc("POST /jobs/{id}/run", jobForm(cfg.Jobs.RunNow))
			mux.HandleFunc("POST /jobs/{id}/cancel", jobForm(cfg.Jobs.Cancel))
			mux.HandleFunc("POST /jobs/{id}/enabled", func(w http.ResponseWriter, r *http.Request) {
				on := r.FormValue("enabled") == "true"
				jobForm(func(ctx context.Context, id string) error { return cfg.Jobs.SetEnabled(ctx, id, on) })(w, r)
			})
		}
	}
	s.routeConversationOps(mux)
	s.routeStops(mux)
	s.routeTasks(mux)
	if cfg.Memory != nil {
		s.routesMemory(mux)
	}
	if cfg.Usage != nil {
		s.routesUsage(mux)
	}
	if cfg.Canvas != nil {
		s.routesCanvas(mux)
	}
	if cfg.Search != nil {
		s.routesSearch(mux)
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no API route %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// apiCSRF guards the JSON API's writes: a browser cannot send
// application/json across origins without a preflight we never grant (the
// Origin itself is checked for every route by guardHost).
func apiCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/") {
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				writeError(w, http.StatusUnsupportedMediaType, "bad_content_type", "send Content-Type: application/json")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

type server struct {
	cfg      Config
	throttle *throttle
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.CatchingUp != nil {
		if left, catching := s.cfg.CatchingUp(r.Context()); catching {
			_, details := s.cfg.Health(r.Context())
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "catching_up", "lag": left, "details": details})
			return
		}
	}
	ready, details := s.cfg.Health(r.Context())
	status := http.StatusOK
	state := "ready"
	if !ready {
		status, state = http.StatusServiceUnavailable, "starting"
	}
	writeJSON(w, status, map[string]any{"status": state, "details": details})
}

func (s *server) listConversations(w http.ResponseWriter, r *http.Request) {
	v, err := s.cfg.Views.Conversations(r.Context(), 200)
	s.reply(w, r, v, err)
}

func (s *server) getConversation(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	v, err := s.cfg.Views.Conversation(r.Context(), id)
	s.reply(w, r, v, err)
}

func (s *server) listRuns(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if _, err := s.cfg.Views.Conversation(r.Context(), id); err != nil {
		s.reply(w, r, nil, err)
		return
	}
	v, err := s.cfg.Views.Runs(r.Context(), id)
	s.reply(w, r, v, err)
}

func (s *server) getRun(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	v, err := s.cfg.Views.Run(r.Context(), id)
	s.reply(w, r, v, err)
}

// recorded streams what a replay of the run reads (events.Recorded: its
// conversation and its team's board, mailboxes and lead), so crew replay
// against a running server replays what it replays on a stopped home.
func (s *server) recorded(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	run, err := s.cfg.Views.Run(r.Context(), id)
	if err != nil {
		s.reply(w, r, nil, err)
		return
	}
	envs, err := events.Recorded(r.Context(), s.cfg.Log, run.Conversation)
	if err != nil {
		s.reply(w, r, nil, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	if err := events.WriteRecorded(w, run.Conversation, envs); err != nil {
		// Headers are sent; the missing end line makes the client refuse it.
		s.logger().Error("recorded events failed", "run", id, "err", err)
	}
}

// export streams the conversation's events from the log (not from a
// projection): the audit trail is the log itself.
func (s *server) export(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	last, err := s.cfg.Log.Last(r.Context(), events.Conv(id).Filter())
	if err != nil {
		s.reply(w, r, nil, err)
		return
	}
	if last == 0 {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("conversation %q has no events", id))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.jsonl"`, id))
	if _, err := events.WriteExport(w, id, s.cfg.AuditKey, s.cfg.Log.Read(r.Context(), events.Conv(id).Filter(), 0)); err != nil {
		// Headers are sent; the missing end line makes verify reject the
		// file, so a cut export can never pass as whole.
		s.logger().Error("export failed", "conversation", id, "err", err)
	}
}

// logger is Config.Logger; none given discards (no global logger).
func (s *server) logger() *slog.Logger {
	if s.cfg.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.cfg.Logger
}

func pathID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if err := events.ValidID(id); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_id", err.Error())
		return "", false
	}
	return id, true
}

func (s *server) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, v)
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, context.Canceled):
	default:
		s.logger().Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", strings.SplitN(err.Error(), "\n", 2)[0])
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
