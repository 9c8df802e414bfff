package jobs

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
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
	// UIToken, when set, guards /riverui/ with "Authorization: Bearer".
	UIToken string
	// UIBasicAuth, "user:password", guards /riverui/ with basic auth.
	UIBasicAuth string
	Logger      *slog.Logger
}

// NewHTTPHandler serves /healthz (the process is alive), /readyz (the
// database answers and its migrations are current), /metrics, and River's
// job UI under /riverui/. The returned start function starts the UI's
// background work; call it once with the worker's context.
func NewHTTPHandler(cfg HTTPConfig) (http.Handler, func(context.Context) error, error) {
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
		mux.Handle("/riverui/", guard(ui, cfg.UIToken, cfg.UIBasicAuth))
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
			if u, p, ok := r.BasicAuth(); ok && equal(u, user) && equal(p, pass) {
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="usersync jobs"`)
		}
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
