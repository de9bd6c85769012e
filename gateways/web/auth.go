package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/ui"
	"github.com/nats-io/nats.go"
)

// The auth token guards a server that listens beyond loopback. A browser
// logs in once at /login with it and gets a session: a random id whose
// SHA-256 the server keeps, never the token itself.

const sessionCookie = "crew_session"

// Session lifetimes: a session ends 30 days after login, or after 7 days
// without a request, whichever comes first.
const (
	SessionMaxAge  = 30 * 24 * time.Hour
	SessionMaxIdle = 7 * 24 * time.Hour
)

// MinTokenBytes is the shortest auth token accepted.
const MinTokenBytes = 32

// GenerateToken returns a fresh auth token: 32 random bytes, base64url.
func GenerateToken() string {
	for {
		b := make([]byte, MinTokenBytes)
		rand.Read(b)
		tok := base64.RawURLEncoding.EncodeToString(b)
		if CheckToken(tok) == nil { // all but about one in a million
			return tok
		}
	}
}

// CheckToken refuses a token too short or too regular to stand for 32
// random bytes ("a", "change-me", "aaaa…", a password). It cannot prove
// randomness; it refuses what is plainly not.
func CheckToken(tok string) error {
	if len(tok) < MinTokenBytes {
		return fmt.Errorf("is %d characters: want at least %d random bytes (`openssl rand -base64 32`, or remove it and crew serve generates one)", len(tok), MinTokenBytes)
	}
	lower := strings.ToLower(tok)
	for _, w := range []string{"change-me", "changeme", "password", "secret", "token", "example", "qwerty", "0123456789", "abcdef"} {
		if strings.Contains(lower, w) {
			// Not quoted: the word is part of the token.
			return errors.New("holds a placeholder or a common word, not random bytes (`openssl rand -base64 32`)")
		}
	}
	if bits := entropyBits(tok); bits < 128 {
		return fmt.Errorf("is too regular (about %.0f bits, want 128): use random bytes (`openssl rand -base64 32`)", bits)
	}
	return nil
}

// entropyBits estimates a string's information from its character
// frequencies (Shannon), times its length.
func entropyBits(s string) float64 {
	counts := map[byte]int{}
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		p := float64(c) / n
		h -= p * math.Log2(p)
	}
	return h * n
}

// Sessions are the logins of the web UI, by the SHA-256 of their id: in
// the log's cluster (events.SessionBucket, each with a TTL at its end), so
// every crew process on it knows them and they survive a restart; or in
// memory only.
type Sessions struct {
	b    *events.Bucket // nil: in memory
	mu   sync.Mutex
	byID map[string]session
	now  func() time.Time
}

type session struct {
	Created time.Time `json:"created"`
	Seen    time.Time `json:"seen"`
}

// NewSessions keeps sessions in memory only.
func NewSessions() *Sessions {
	return &Sessions{byID: map[string]session{}, now: time.Now}
}

// SharedSessions keeps sessions in b (events.SessionBucket).
func SharedSessions(b *events.Bucket) *Sessions {
	return &Sessions{b: b, byID: map[string]session{}, now: time.Now}
}

// OpenSessions opens the sessions' bucket on nc and moves in, once, the
// file an older build kept them in (MigrateFile); logger is told of a
// raise of the bucket's replicas and of what moved. sync runs after each
// write (events.OpenBucket).
func OpenSessions(ctx context.Context, nc *nats.Conn, file string, sync func() error, logger *slog.Logger) (*Sessions, error) {
	b, err := events.OpenBucket(ctx, nc, events.SessionBucket, "web UI logins", sync)
	if err != nil {
		return nil, err
	}
	b.Raised().Tell(logger)
	s := SharedSessions(b)
	n, err := s.MigrateFile(ctx, file)
	if n > 0 {
		logger.Info("moved the web logins from a file into the log's bucket", "sessions", n, "from", file)
	}
	return s, err
}

// MigrateFile moves the sessions a home kept in path (a 0600 file, before
// they lived in the cluster) into s once, then removes the file; a file
// other users can read is refused, as it always was. It returns how many
// live sessions it moved.
func (s *Sessions) MigrateFile(ctx context.Context, path string) (int, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sessions %s: %w", path, err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return 0, fmt.Errorf("sessions %s: mode %04o is readable by others; run: chmod 600 %s", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("sessions %s: %w", path, err)
	}
	var file struct {
		Sessions map[string]*session `json:"sessions"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return 0, fmt.Errorf("sessions %s: %w (delete it to log everyone out)", path, err)
	}
	moved := 0
	for k, v := range file.Sessions {
		if v == nil || expired(*v, s.now()) || len(k) != 2*sha256.Size {
			continue
		}
		if err := s.put(ctx, k, *v); err != nil {
			return moved, fmt.Errorf("sessions %s: %w", path, err)
		}
		moved++
	}
	if err := os.Remove(path); err != nil {
		return moved, fmt.Errorf("sessions %s: %w", path, err)
	}
	return moved, nil
}

func sessionKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// Create starts a session and returns its id (the cookie value).
func (s *Sessions) Create(ctx context.Context) (string, error) {
	b := make([]byte, 32)
	rand.Read(b)
	id := base64.RawURLEncoding.EncodeToString(b)
	now := s.now()
	return id, s.put(ctx, sessionKey(id), session{Created: now, Seen: now})
}

// Valid reports whether id is a live session, and marks it seen. A
// session that cannot be read is no login.
func (s *Sessions) Valid(ctx context.Context, id string) bool {
	if id == "" {
		return false
	}
	k := sessionKey(id)
	se, ok := s.get(ctx, k)
	now := s.now()
	if !ok {
		return false
	}
	if expired(se, now) {
		s.delete(ctx, k)
		return false
	}
	if now.Sub(se.Seen) > time.Hour { // written at most hourly per session
		se.Seen = now
		s.put(ctx, k, se)
	}
	return true
}

// Delete ends a session (logout).
func (s *Sessions) Delete(ctx context.Context, id string) error {
	return s.delete(ctx, sessionKey(id))
}

func expired(se session, now time.Time) bool {
	return now.Sub(se.Created) > SessionMaxAge || now.Sub(se.Seen) > SessionMaxIdle
}

func (s *Sessions) get(ctx context.Context, k string) (session, bool) {
	if s.b == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		se, ok := s.byID[k]
		return se, ok
	}
	var se session
	b, err := s.b.Get(ctx, k)
	return se, err == nil && json.Unmarshal(b, &se) == nil
}

// put keeps se under k; in the bucket it vanishes when it would expire.
func (s *Sessions) put(ctx context.Context, k string, se session) error {
	if s.b == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.byID[k] = se
		for k, se := range s.byID {
			if expired(se, s.now()) {
				delete(s.byID, k)
			}
		}
		return nil
	}
	b, err := json.Marshal(se)
	if err != nil {
		return err
	}
	left := min(se.Created.Add(SessionMaxAge).Sub(s.now()), se.Seen.Add(SessionMaxIdle).Sub(s.now()))
	return s.b.Put(ctx, k, b, max(left.Truncate(time.Second)+time.Second, time.Second))
}

func (s *Sessions) delete(ctx context.Context, k string) error {
	if s.b == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.byID, k)
		return nil
	}
	return s.b.Delete(ctx, k)
}

// Login throttling: a token (bearer or login form) is compared first, in
// constant time, and the right one is always let in, so a correct token or
// session is never throttled by failures before it. Only failures are
// slowed: after MaxLoginFailures from one client address the address waits,
// doubling from 1 s up to 60 s, and during a wait only spareCompares more
// requests of it are compared at all — the rest get 429 uncompared, the
// right token included — so a guesser gets at most a few comparisons per
// wait however many requests it sends in parallel. Success forgives
// nothing (an attacker sharing the owner's address gains no fresh
// guesses); failures are forgotten after forgetAfter without one.
const (
	MaxLoginFailures = 5
	spareCompares    = 3
	maxLoginWait     = 60 * time.Second
	forgetAfter      = time.Hour
	maxThrottled     = 4096 // addresses remembered
)

type throttle struct {
	mu  sync.Mutex
	m   map[string]*attempts
	now func() time.Time
}

type attempts struct {
	fails int
	next  time.Time // the address waits until then
	spare int       // comparisons left during the wait
	last  time.Time // the last failure
}

func newThrottle() *throttle { return &throttle{m: map[string]*attempts{}, now: time.Now} }

// check compares a token from client (right does, in constant time) unless
// the address has spent its comparisons for the current wait. ok is a right
// token; wait > 0 means the address was waiting (429 with Retry-After),
// whether the token was compared or not.
func (t *throttle) check(client string, right func() bool) (ok bool, wait time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	a := t.m[client]
	if a != nil && now.Sub(a.last) > forgetAfter && !now.Before(a.next) {
		delete(t.m, client)
		a = nil
	}
	waiting := a != nil && now.Before(a.next)
	if waiting {
		if a.spare == 0 {
			return false, a.next.Sub(now)
		}
		a.spare--
	}
	if right() {
		return true, 0
	}
	if a == nil {
		t.evictLocked(now)
		a = &attempts{}
		t.m[client] = a
	}
	a.fails++
	a.last = now
	if !waiting {
		if a.fails >= MaxLoginFailures {
			a.next, a.spare = now.Add(loginWait(a.fails)), spareCompares
		}
		return false, 0 // this failure is answered; the wait is for the next
	}
	return false, a.next.Sub(now)
}

// loginWait is the pause after the n-th failure (n ≥ MaxLoginFailures).
func loginWait(n int) time.Duration {
	shift := n - MaxLoginFailures
	if shift > 6 {
		return maxLoginWait
	}
	return min(time.Second<<shift, maxLoginWait)
}

// evictLocked bounds the table: forget addresses quiet for a day, then the
// quietest one.
func (t *throttle) evictLocked(now time.Time) {
	if len(t.m) < maxThrottled {
		return
	}
	oldest := ""
	for k, a := range t.m {
		if now.Sub(a.last) > 24*time.Hour && now.After(a.next) {
			delete(t.m, k)
		} else if oldest == "" || a.last.Before(t.m[oldest].last) {
			oldest = k
		}
	}
	if len(t.m) >= maxThrottled && oldest != "" {
		delete(t.m, oldest)
	}
}

// clientAddress is who a login attempt counts against: the peer's IP, an
// IPv6 peer by its /64 (one host owns a whole /64).
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip.To4() != nil {
		return ip.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func (s *server) authenticate(next http.Handler) http.Handler {
	if s.cfg.AuthToken == "" {
		return next
	}
	want := []byte("Bearer " + s.cfg.AuthToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open := r.URL.Path == "/healthz" || r.URL.Path == "/login" || strings.HasPrefix(r.URL.Path, "/static/")
		if open || s.loggedIn(r) {
			next.ServeHTTP(w, r)
			return
		}
		if got := r.Header.Get("Authorization"); got != "" {
			ok, wait := s.throttle.check(clientAddress(r), func() bool { return subtle.ConstantTimeCompare([]byte(got), want) == 1 })
			if ok {
				next.ServeHTTP(w, r)
				return
			}
			if wait > 0 {
				secs := int(math.Ceil(wait.Seconds()))
				w.Header().Set("Retry-After", strconv.Itoa(secs))
				writeError(w, http.StatusTooManyRequests, "too_many_attempts", fmt.Sprintf("too many wrong auth tokens from your address: try again in %d s", secs))
				return
			}
		}
		if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		writeError(w, http.StatusUnauthorized, "unauthorized", "this server needs its auth token: Authorization: Bearer <token>, or log in at /login")
	})
}

func (s *server) loggedIn(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	return err == nil && s.cfg.Sessions.Valid(r.Context(), c.Value)
}

func (s *server) login(w http.ResponseWriter, r *http.Request) {
	page := func(status int, msg string) {
		htmlHeaders(w)
		w.WriteHeader(status)
		ui.LoginPage(ui.LoginView{Error: msg, CSRF: ensureCSRF(w, r)}).Render(r.Context(), w)
	}
	if s.cfg.AuthToken == "" {
		page(http.StatusUnauthorized, "This server has no auth token: no login is needed.")
		return
	}
	token := r.PostFormValue("token")
	ok, wait := s.throttle.check(clientAddress(r), func() bool { return subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.AuthToken)) == 1 })
	if !ok && wait > 0 {
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		page(http.StatusTooManyRequests, fmt.Sprintf("Too many failed logins from your address: try again in %d s.", secs))
		return
	}
	if !ok {
		page(http.StatusUnauthorized, "That token is not this server's auth token (CREW_AUTH_TOKEN in the home's env file, or auth_token in config.yaml).")
		return
	}
	id, err := s.cfg.Sessions.Create(r.Context())
	if err != nil {
		s.logger().Error("save session", "err", err)
		page(http.StatusInternalServerError, "Could not save the session: "+err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(SessionMaxAge / time.Second)})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the browser's session and clears its cookie.
func (s *server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if err := s.cfg.Sessions.Delete(r.Context(), c.Value); err != nil {
			s.logger().Error("save sessions", "err", err)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
