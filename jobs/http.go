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
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"github.com/usersync/usersync/sync/warehouse"
)

// HTTPConfig configures the worker's HTTP surface.
type HTTPConfig struct {
	Pool        *pgxpool.Pool
	Schema      string
	RiverSchema string
	Metrics     *Metrics
	River       *river.Client[pgx.Tx]
	// Addr is the address the handler is served on: the job UI needs a
	// guard unless it is loopback (CheckUIGuard).
	Addr string
	// UIToken, when set, guards /riverui/ with "Authorization: Bearer".
	UIToken string
	// UIBasicAuth, "user:password", guards /riverui/ with basic auth.
	UIBasicAuth string
	Logger      *slog.Logger
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

// CheckUIGuard refuses what would leave the job UI open: an address other
// than loopback without a token or basic auth, and basic auth with an empty
// user or password. It never quotes the secrets.
func CheckUIGuard(addr, token, basic string) error {
	if basic != "" {
		if user, pass, ok := strings.Cut(basic, ":"); !ok || user == "" || pass == "" {
			return errors.New("USERSYNC_HTTP_BASIC_AUTH must be user:password with neither part empty")
		}
	}
	if token != "" || basic != "" || addr == "off" || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("USERSYNC_HTTP_ADDR=%s is not a loopback address: set USERSYNC_HTTP_TOKEN or USERSYNC_HTTP_BASIC_AUTH (or their _FILE forms) to guard the job UI, or bind 127.0.0.1", addr)
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

// NewHTTPHandler serves /healthz (the process is alive), /readyz (the
// database answers and its migrations are current), /metrics, and River's
// job UI under /riverui/. The returned start function starts the UI's
// background work; call it once with the worker's context.
func NewHTTPHandler(cfg HTTPConfig) (http.Handler, func(context.Context) error, error) {
	if err := CheckUIGuard(cfg.Addr, cfg.UIToken, cfg.UIBasicAuth); err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := ready(ctx, cfg); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics.Handler())
	}
	start := func(context.Context) error { return nil }
	if cfg.River != nil {
		ui, err := riverui.NewHandler(&riverui.HandlerOpts{Endpoints: riverui.NewEndpoints(cfg.River, nil),
			Logger: cfg.Logger, Prefix: "/riverui"})
		if err != nil {
			return nil, nil, fmt.Errorf("configuring the job UI: %w", err)
		}
		mux.Handle("/riverui/", guard(sameOrigin(ui), cfg.UIToken, cfg.UIBasicAuth))
		start = ui.Start
	}
	return mux, start, nil
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

// guard requires the token or the basic-auth credentials, when either is set.
func guard(h http.Handler, token, basic string) http.Handler {
	if token == "" && basic == "" {
		return h
	}
	user, pass, _ := strings.Cut(basic, ":")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
}

// equal compares in constant time, also in the lengths (of which the
// hashes tell nothing).
func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}
