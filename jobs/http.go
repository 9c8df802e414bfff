package jobs

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"github.com/usersync/usersync/sync/warehouse"
)

// HTTPConfig configures the worker's HTTP surface.
type HTTPConfig struct {
	Pool   *pgxpool.Pool
	Schema string
	// Store is the default account's warehouse: /readyz probes whether it
	// takes writes.
	Store       *warehouse.Store
	RiverSchema string
	Metrics     *Metrics
	// Addr is the address the handler is served on: the job UI needs a
	// guard unless it is loopback (CheckUIGuard).
	Addr string
	// UIToken, when set, guards /riverui/ with "Authorization: Bearer".
	UIToken string
	// UIBasicAuth, "user:password", guards /riverui/ with basic auth.
	UIBasicAuth string
	// UIHosts are the host names (no port) the job UI answers to besides
	// localhost and IP addresses; see hostGuard.
	UIHosts []string
	// Health, when set, says what the live worker waits for (an account's
	// OAuth login): /healthz answers 200 with it after "ok", since the
	// process works and a restart would not help.
	Health func() string
	Logger *slog.Logger
}

// maxUIBody bounds a request body of the job UI, whose API takes small JSON
// documents (job ids, a queue name).
const maxUIBody = 1 << 20

// NewHTTPServer is the worker's HTTP server for handler: every phase of a
// connection is bounded, so slow or huge requests cannot pile up.
func NewHTTPServer(handler http.Handler) *http.Server {
	return &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 64 << 10}
}

// MinUISecret is the fewest characters of the job UI's token or basic-auth
// password, and minUISecretLetters the fewest different characters in it:
// with failures slowed to one a second (failureLimiter), a random secret of
// this length cannot be guessed.
const (
	MinUISecret        = 16
	minUISecretLetters = 5
)

// CheckUIGuard refuses what would leave the job UI open: an address other
// than loopback without a token or basic auth, basic auth with an empty
// user or password, and a token or password shorter than MinUISecret
// characters or of fewer than minUISecretLetters different ones. It never
// quotes the secrets.
func CheckUIGuard(addr, token, basic string) error {
	if basic != "" {
		user, pass, ok := strings.Cut(basic, ":")
		if !ok || user == "" || pass == "" {
			return errors.New("USERSYNC_HTTP_BASIC_AUTH must be user:password with neither part empty")
		}
		if weak(pass) {
			return fmt.Errorf("USERSYNC_HTTP_BASIC_AUTH's password is too weak: use at least %d characters, at least %d of them different (like openssl rand -hex 16)", MinUISecret, minUISecretLetters)
		}
	}
	if token != "" && weak(token) {
		return fmt.Errorf("USERSYNC_HTTP_TOKEN is too weak: use at least %d characters, at least %d of them different (like openssl rand -hex 16)", MinUISecret, minUISecretLetters)
	}
	if token != "" || basic != "" || addr == "off" || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("USERSYNC_HTTP_ADDR=%s is not a loopback address: set USERSYNC_HTTP_TOKEN or USERSYNC_HTTP_BASIC_AUTH (or their _FILE forms) to guard the job UI, or bind 127.0.0.1", addr)
}

func weak(secret string) bool {
	letters := map[rune]bool{}
	for _, r := range secret {
		letters[r] = true
	}
	return utf8.RuneCountInString(secret) < MinUISecret || len(letters) < minUISecretLetters
}

// isLoopback says whether addr (host:port) listens on loopback only: a
// loopback IP or localhost. An empty host listens everywhere; another name
// may resolve to anything.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// HTTPHandler serves /healthz (the process is alive), /readyz (the worker
// is working, the database answers and its migrations are current),
// /metrics, and River's job UI under /riverui/. It serves from the worker's
// start, before the database answers: probes and scrapes then see a live
// process that is not ready, and the job UI, which needs River, answers 503
// until StartJobUI.
type HTTPHandler struct {
	cfg     HTTPConfig
	mux     *http.ServeMux
	ui      atomic.Pointer[http.Handler]
	waiting atomic.Pointer[string] // why the worker is not working yet; nil once it is
}

// NewHTTPHandler returns the worker's HTTP handler, not ready until
// StartJobUI: /readyz answers 503 with "starting" or what SetWaiting said.
func NewHTTPHandler(cfg HTTPConfig) (*HTTPHandler, error) {
	if err := CheckUIGuard(cfg.Addr, cfg.UIToken, cfg.UIBasicAuth); err != nil {
		return nil, err
	}
	h := &HTTPHandler{cfg: cfg, mux: http.NewServeMux()}
	h.SetWaiting("starting")
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if cfg.Health != nil {
			if note := cfg.Health(); note != "" {
				_, _ = fmt.Fprintf(w, "ok: %s\n", note)
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	h.mux.HandleFunc("GET /readyz", h.readyz)
	if cfg.Metrics != nil {
		h.mux.Handle("GET /metrics", cfg.Metrics.Handler())
	}
	h.mux.HandleFunc("/riverui/", func(w http.ResponseWriter, r *http.Request) {
		if ui := h.ui.Load(); ui != nil {
			(*ui).ServeHTTP(w, r)
			return
		}
		http.Error(w, "the job UI starts once the worker works (see /readyz)", http.StatusServiceUnavailable)
	})
	return h, nil
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// SetWaiting says why the worker does not work yet, for /readyz.
func (h *HTTPHandler) SetWaiting(reason string) { h.waiting.Store(&reason) }

// StartJobUI mounts River's job UI, starts its background work with ctx
// (the worker's) and lets /readyz check the database from then on: call it
// once River's client is about to start.
func (h *HTTPHandler) StartJobUI(ctx context.Context, rc *river.Client[pgx.Tx]) error {
	ui, err := riverui.NewHandler(&riverui.HandlerOpts{Endpoints: riverui.NewEndpoints(rc, nil),
		Logger: h.cfg.Logger, Prefix: "/riverui"})
	if err != nil {
		return fmt.Errorf("configuring the job UI: %w", err)
	}
	if err := ui.Start(ctx); err != nil {
		return fmt.Errorf("starting the job UI: %w", err)
	}
	guarded := h.cfg.UIToken != "" || h.cfg.UIBasicAuth != ""
	handler := hostGuard(guard(sameOrigin(ui), h.cfg.UIToken, h.cfg.UIBasicAuth, newFailureLimiter(time.Now)),
		h.cfg.UIHosts, guarded)
	h.ui.Store(&handler)
	h.waiting.Store(nil)
	return nil
}

func (h *HTTPHandler) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	var err error
	if why := h.waiting.Load(); why != nil {
		err = errors.New(*why)
	} else {
		err = ready(ctx, h.cfg)
	}
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

func ready(ctx context.Context, cfg HTTPConfig) error {
	if err := cfg.Pool.Ping(ctx); err != nil {
		return fmt.Errorf("database unreachable")
	}
	applied, latest, err := warehouse.MigrationStatus(ctx, cfg.Pool, cfg.Schema)
	if err != nil {
		return fmt.Errorf("reading migrations")
	}
	if applied < latest {
		return fmt.Errorf("schema %s at migration %d of %d (run usersync migrate)", cfg.Schema, applied, latest)
	}
	ok, err := RiverMigrationsCurrent(ctx, cfg.Pool, cfg.RiverSchema)
	if err != nil || !ok {
		return fmt.Errorf("job queue schema %s is not migrated (run usersync migrate)", cfg.RiverSchema)
	}
	if cfg.Store != nil {
		if err := cfg.Store.Writable(ctx); errors.Is(err, warehouse.ErrWritesRefused) {
			return err
		}
	}
	return nil
}

// sameOrigin refuses what a browser may send the UI from another site:
// unsafe requests that are cross-origin (http.CrossOriginProtection reads
// Sec-Fetch-Site and Origin), and bodies that are not JSON (a cross-site
// form or text/plain POST needs no preflight; JSON does). Bodies are capped.
func sameOrigin(h http.Handler) http.Handler {
	json := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && r.Method != http.MethodGet && r.Method != http.MethodHead {
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
				http.Error(w, "the job UI takes application/json bodies only", http.StatusUnsupportedMediaType)
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxUIBody)
		h.ServeHTTP(w, r)
	})
	return http.NewCrossOriginProtection().Handler(json)
}

// hostGuard refuses a request whose Host is a name other than localhost
// or one of hosts: DNS rebinding points a name of the attacker's at
// 127.0.0.1, and a browser then sends the attacker's page's requests, Host
// and Origin both that name, to the UI as same-origin ones. An IP address
// cannot be rebound, so it is always taken. When the UI is guarded by a
// token or basic auth (which a browser never sends to the attacker's
// name), the check is made only if hosts are configured, so a guarded UI
// behind a proxy keeps answering to the proxy's name.
func hostGuard(h http.Handler, hosts []string, guarded bool) http.Handler {
	if guarded && len(hosts) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hp, _, err := net.SplitHostPort(host); err == nil {
			host = hp
		}
		host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
		if _, err := netip.ParseAddr(host); err != nil && host != "localhost" && !slices.Contains(hosts, host) {
			http.Error(w, "the job UI does not answer to this Host; add it to USERSYNC_HTTP_HOSTS", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// failureLimiter slows guessing: a bucket of failedTries wrong credentials
// (requests without any are not counted)
// that refills one a second. While it is empty every request is refused
// with 429 before its credentials are compared, the right ones too, so a
// guesser learns nothing; the rightful user waits as long as the failures
// go on.
type failureLimiter struct {
	mu     sync.Mutex
	now    func() time.Time
	tokens float64
	last   time.Time
}

const failedTries = 10

func newFailureLimiter(now func() time.Time) *failureLimiter {
	return &failureLimiter{now: now, tokens: failedTries, last: now()}
}

// allow says whether a request may have its credentials compared.
func (l *failureLimiter) allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.tokens = min(failedTries, l.tokens+now.Sub(l.last).Seconds())
	l.last = now
	return l.tokens >= 1
}

// fail counts a wrong try.
func (l *failureLimiter) fail() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens--
}

// guard requires the token or the basic-auth credentials, when either is
// set; failures are slowed by limit.
func guard(h http.Handler, token, basic string, limit *failureLimiter) http.Handler {
	if token == "" && basic == "" {
		return h
	}
	user, pass, _ := strings.Cut(basic, ":")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !limit.allow() {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many failed tries; wait", http.StatusTooManyRequests)
			return
		}
		if token != "" {
			if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && equal(got, token) {
				h.ServeHTTP(w, r)
				return
			}
		}
		if basic != "" {
			u, p, ok := r.BasicAuth()
			userOK, passOK := equal(u, user), equal(p, pass) // both, always: no timing tells which was wrong
			if ok && userOK && passOK {
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="usersync jobs"`)
		}
		if r.Header.Get("Authorization") != "" { // a request without credentials guesses nothing (a browser's first, before it asks for basic auth)
			limit.fail()
		}
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
}

// equal compares in constant time, also in the lengths (of which the
// hashes tell nothing).
func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}
