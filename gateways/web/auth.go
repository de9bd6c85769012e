package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/ui"
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

// Sessions are the logins of the web UI, by the SHA-256 of their id.
// With a file, they survive a restart; the file is written 0600.
type Sessions struct {
	mu   sync.Mutex
	path string
	byID map[string]*session
	now  func() time.Time
}

type session struct {
	Created time.Time `json:"created"`
	Seen    time.Time `json:"seen"`
}

// NewSessions keeps sessions in memory only.
func NewSessions() *Sessions {
	return &Sessions{byID: map[string]*session{}, now: time.Now}
}

// OpenSessions keeps sessions in path (created 0600 on the first login).
// A file other users can read is refused: it would let them log in.
func OpenSessions(path string) (*Sessions, error) {
	s := NewSessions()
	s.path = path
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions %s: %w", path, err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("sessions %s: mode %04o is readable by others; run: chmod 600 %s", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sessions %s: %w", path, err)
	}
	var file struct {
		Sessions map[string]*session `json:"sessions"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("sessions %s: %w (delete it to log everyone out)", path, err)
	}
	for k, v := range file.Sessions {
		if v != nil {
			s.byID[k] = v
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	return s, nil
}

func sessionKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// Create starts a session and returns its id (the cookie value).
func (s *Sessions) Create() (string, error) {
	b := make([]byte, 32)
	rand.Read(b)
	id := base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.pruneLocked()
	s.byID[sessionKey(id)] = &session{Created: now, Seen: now}
	return id, s.saveLocked()
}

// Valid reports whether id is a live session, and marks it seen.
func (s *Sessions) Valid(id string) bool {
	if id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := sessionKey(id)
	se := s.byID[k]
	now := s.now()
	if se == nil {
		return false
	}
	if expired(se, now) {
		delete(s.byID, k)
		s.saveLocked()
		return false
	}
	if now.Sub(se.Seen) > time.Hour { // write the file at most hourly per session
		se.Seen = now
		s.saveLocked()
	}
	return true
}

// Delete ends a session (logout).
func (s *Sessions) Delete(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, sessionKey(id))
	return s.saveLocked()
}

func expired(se *session, now time.Time) bool {
	return now.Sub(se.Created) > SessionMaxAge || now.Sub(se.Seen) > SessionMaxIdle
}

func (s *Sessions) pruneLocked() {
	now := s.now()
	for k, se := range s.byID {
		if expired(se, now) {
			delete(s.byID, k)
		}
	}
}

func (s *Sessions) saveLocked() error {
	if s.path == "" {
		return nil
	}
	b, err := json.Marshal(map[string]any{"sessions": s.byID})
	if err != nil {
		return err
	}
	return writePrivate(s.path, b)
}

// writePrivate replaces path with data, mode 0600, atomically.
func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*") // 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
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
	return err == nil && s.cfg.Sessions.Valid(c.Value)
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
	id, err := s.cfg.Sessions.Create()
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
		if err := s.cfg.Sessions.Delete(c.Value); err != nil {
			s.logger().Error("save sessions", "err", err)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
