package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
)

func simulateCommand() command {
	return command{
		name:    "simulate",
		summary: "serve the built-in simulated API (for the demo, tests and trials)",
		details: `Serves /api/v2/users, /teams, /roles, /profiles, GET /oauth/authorize and
POST /oauth/token over a deterministic generated dataset, faithful to the API's
documentation: filters, sort, include, sparse fields, cursor pagination, counts,
JSON:API errors. Knobs inject rate limits, faults, truncated bodies, latency and
mutations. Without --token, --client-id or --refresh-token any non-empty bearer
token is accepted. --client-id alone turns OAuth on with no refresh token: get
one with usersync auth login. Stops cleanly on SIGINT/SIGTERM.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (port 0 picks a free one)")
			var o apisim.Options
			fs.Int64Var(&o.Seed, "seed", 1, "seed of the generated dataset")
			fs.IntVar(&o.Users, "users", 1000, "number of users")
			fs.IntVar(&o.IdenticalTimestamps, "identical-timestamps", 0, "give this many users one shared updatedAt")
			fs.StringVar(&o.Token, "token", "", "accept only this static bearer token (default: any non-empty token)")
			fs.StringVar(&o.RefreshToken, "refresh-token", "", "turn on OAuth with this initial refresh token")
			fs.StringVar(&o.ClientID, "client-id", "", "OAuth client id to require (turns OAuth on: the authorization-code flow issues the first refresh token)")
			fs.StringVar(&o.ClientSecret, "client-secret", "", "OAuth client secret to require")
			fs.DurationVar(&o.TokenTTL, "token-ttl", 0, "lifetime of issued access tokens (default 2h)")
			fs.BoolVar(&o.DenyConsent, "deny-consent", false, "answer GET /oauth/authorize as if the user refused (error=access_denied)")
			fs.IntVar(&o.PageSizeCap, "page-cap", 0, "serve at most this many resources a page (default 1000)")
			fs.IntVar(&o.RateLimit, "rate-limit", jsonapi.DefaultRateLimit, "requests allowed per hour before 429, sent in x-ratelimit-* headers as the service does (0: unlimited, no headers)")
			fs.IntVar(&o.RateLimitEvery, "rate-limit-every", 0, "answer every Nth request with 429")
			fs.DurationVar(&o.RetryAfter, "retry-after", 0, "Retry-After of injected 429s")
			fs.Float64Var(&o.FaultRate, "fault-rate", 0, "share of requests answered with a 5xx (0..1)")
			fs.Float64Var(&o.TruncateRate, "truncate-rate", 0, "share of responses cut short (0..1)")
			fs.DurationVar(&o.Latency, "latency", 0, "delay before each response")
			fs.BoolVar(&o.TeamsLinksOnly, "teams-links-only", false, "send users' teams relationship without data (links only)")
			fs.BoolVar(&o.OutOfOrder, "out-of-order", false, "shuffle the resources within each page")
			fs.DurationVar(&o.LateVisibility, "late-visibility", 0, "make changes visible to filtered queries only this long after their updatedAt")
			fs.BoolVar(&o.OffsetPagination, "offset-pagination", false, "page with offsets (rows shift under concurrent updates) instead of cursors")
			fs.BoolVar(&o.SchemaDrift, "schema-drift", false, "send attributes the catalog does not know")
			fs.Float64Var(&o.WrongTypeRate, "wrong-type-rate", 0, "share of users sent with a wrong-typed value (0..1)")
			fs.IntVar(&o.Churn.Every, "mutate-every", 0, "mutate the dataset every N requests")
			fs.IntVar(&o.Churn.Update, "mutate-update", 5, "users updated per mutation")
			fs.IntVar(&o.Churn.Create, "mutate-create", 1, "users created per mutation")
			fs.IntVar(&o.Churn.DeleteEvery, "mutate-delete-every", 0, "delete a team, role or profile every N mutations")
			fs.IntVar(&o.Churn.Memberships, "mutate-memberships", 0, "users moved into or out of a team per mutation")
			fs.IntVar(&o.Churn.EditEvery, "mutate-edit-every", 0, "rename a team, role or profile (and re-parent a role) every N mutations")
			fs.IntVar(&o.Churn.RestoreEvery, "mutate-restore-every", 0, "bring back a deleted team, role or profile every N mutations")
			return func(ctx context.Context, e *env, _ []string) error {
				if err := o.Validate(); err != nil {
					return usageError{err}
				}
				return serveSimulator(ctx, e, *addr, o)
			}
		},
	}
}

func serveSimulator(ctx context.Context, e *env, addr string, o apisim.Options) error {
	o.Logger = e.logger
	start := time.Now()
	sim := apisim.New(o)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return usageError{fmt.Errorf("--addr: %w", err)}
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	e.logger.Info("simulated API listening", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String(),
		"users", o.Users, "seed", o.Seed, "startup_ms", time.Since(start).Milliseconds())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stopping: %w", err)
	}
	st := sim.Stats()
	e.logger.Info("simulated API stopped", "requests", st.Requests, "rate_limited", st.RateLimited)
	return nil
}
