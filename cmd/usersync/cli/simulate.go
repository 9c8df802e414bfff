package cli

import (
	"context"
	"flag"
	"fmt"
	"net"

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
one with usersync auth login. Stops cleanly on SIGINT/SIGTERM.

--accounts N also serves N accounts, acct_001 to acct_N, each under its own
base URL http://ADDR/accounts/<name> with its own dataset (from --seed and its
name), static token (or OAuth client), --rate-limit budget and mutations; the
fault knobs apply to the --fault-accounts last accounts only. Each account's
name, base URL and credentials are printed as JSON lines (or written to
--accounts-file). The unprefixed paths keep serving the --users dataset.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (port 0 picks a free one)")
			var o apisim.Options
			addDatasetFlags(fs, &o)
			addFaultFlags(fs, &o.Knobs)
			addMutationFlags(fs, &o.Churn)
			ff := addFleetFlags(fs)
			return func(ctx context.Context, e *env, _ []string) error {
				if err := o.Validate(); err != nil {
					return usageError{err}
				}
				if err := ff.Validate(); err != nil {
					return usageError{err}
				}
				ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", *addr)
				if err != nil {
					return usageError{fmt.Errorf("--addr: %w", err)}
				}
				o.Logger = e.logger
				return apisim.Serve(ctx, ln, e.stdout, o, *ff)
			}
		},
	}
}

// addDatasetFlags adds the flags of the default dataset, its credentials
// and the service's own limits.
func addDatasetFlags(fs *flag.FlagSet, o *apisim.Options) {
	fs.Int64Var(&o.Seed, "seed", 1, "seed of the generated dataset (and, with the account names, of the accounts' datasets and tokens)")
	fs.IntVar(&o.Users, "users", 1000, "number of users")
	fs.IntVar(&o.IdenticalTimestamps, "identical-timestamps", 0, "give this many users one shared updatedAt")
	fs.StringVar(&o.Token, "token", "", "accept only this static bearer token (default: any non-empty token)")
	fs.StringVar(&o.RefreshToken, "refresh-token", "", "turn on OAuth with this initial refresh token")
	fs.StringVar(&o.ClientID, "client-id", "", "OAuth client id to require (turns OAuth on: the authorization-code flow issues the first refresh token)")
	fs.StringVar(&o.ClientSecret, "client-secret", "", "OAuth client secret to require")
	fs.DurationVar(&o.TokenTTL, "token-ttl", 0, "lifetime of issued access tokens (default 2h; every account's)")
	fs.IntVar(&o.PageSizeCap, "page-cap", 0, "serve at most this many resources a page (default 1000; every account)")
	fs.IntVar(&o.RateLimit, "rate-limit", jsonapi.DefaultRateLimit, "requests allowed per hour before 429, sent in x-ratelimit-* headers as the service does (0: unlimited, no headers); each account has its own budget")
}

// addFaultFlags adds the knobs that make the service misbehave: with
// --accounts they apply to the default dataset and the fault accounts.
func addFaultFlags(fs *flag.FlagSet, k *apisim.Knobs) {
	fs.BoolVar(&k.DenyConsent, "deny-consent", false, "answer GET /oauth/authorize as if the user refused (error=access_denied)")
	fs.IntVar(&k.RateLimitEvery, "rate-limit-every", 0, "answer every Nth request with 429")
	fs.DurationVar(&k.RetryAfter, "retry-after", 0, "Retry-After of injected 429s")
	fs.Float64Var(&k.FaultRate, "fault-rate", 0, "share of requests answered with a 5xx (0..1)")
	fs.Float64Var(&k.TruncateRate, "truncate-rate", 0, "share of responses cut short (0..1)")
	fs.DurationVar(&k.Latency, "latency", 0, "delay before each response")
	fs.BoolVar(&k.TeamsLinksOnly, "teams-links-only", false, "send users' teams relationship without data (links only)")
	fs.BoolVar(&k.OutOfOrder, "out-of-order", false, "shuffle the resources within each page")
	fs.DurationVar(&k.LateVisibility, "late-visibility", 0, "make changes visible to filtered queries only this long after their updatedAt")
	fs.BoolVar(&k.OffsetPagination, "offset-pagination", false, "page with offsets (rows shift under concurrent updates) instead of cursors")
	fs.BoolVar(&k.SchemaDrift, "schema-drift", false, "send attributes the catalog does not know")
	fs.Float64Var(&k.WrongTypeRate, "wrong-type-rate", 0, "share of users sent with a wrong-typed value (0..1)")
}

// addMutationFlags adds the churn knobs: with --accounts every account
// changes, each on its own request count.
func addMutationFlags(fs *flag.FlagSet, c *apisim.Churn) {
	fs.IntVar(&c.Every, "mutate-every", 0, "mutate the dataset every N requests (each account on its own requests)")
	fs.IntVar(&c.Update, "mutate-update", 5, "users updated per mutation")
	fs.IntVar(&c.Create, "mutate-create", 1, "users created per mutation")
	fs.IntVar(&c.DeleteEvery, "mutate-delete-every", 0, "delete a team, role or profile every N mutations")
	fs.IntVar(&c.Memberships, "mutate-memberships", 0, "users moved into or out of a team per mutation")
	fs.IntVar(&c.EditEvery, "mutate-edit-every", 0, "rename a team, role or profile (and re-parent a role) every N mutations")
	fs.IntVar(&c.RestoreEvery, "mutate-restore-every", 0, "bring back a deleted team, role or profile every N mutations")
}

// addFleetFlags adds the flags that serve accounts beside the default dataset.
func addFleetFlags(fs *flag.FlagSet) *apisim.FleetLayout {
	ff := &apisim.FleetLayout{}
	fs.IntVar(&ff.Accounts, "accounts", 0, "also serve this many accounts, acct_001 to acct_N, each under /accounts/<name> (0: the single dataset only)")
	fs.IntVar(&ff.Users, "account-users", 1000, "users of each account")
	fs.IntVar(&ff.Large, "large-accounts", 0, "make the first N accounts large (--large-users each)")
	fs.IntVar(&ff.LargeUsers, "large-users", 100_000, "users of each large account")
	fs.IntVar(&ff.Faults, "fault-accounts", 0, "apply the fault knobs (--fault-rate, --truncate-rate, --latency, --rate-limit-every...) to the last N accounts only")
	fs.IntVar(&ff.Revoked, "revoked-accounts", 0, "revoke the grant of N accounts (those just before the fault accounts): every token refused with 401")
	fs.IntVar(&ff.RevokeAfter, "revoke-after", 0, "revoke those accounts' grants after this many API requests each (0: from the start)")
	fs.IntVar(&ff.OAuth, "oauth-accounts", 0, "give N accounts (those just after the large ones) an OAuth client and refresh token instead of a static token")
	fs.StringVar(&ff.File, "accounts-file", "", "write the accounts as JSON lines {name, api_url, token or oauth_*, users...} to this file (default: print them)")
	return ff
}
