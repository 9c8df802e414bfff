package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
				if err := ff.validate(); err != nil {
					return usageError{err}
				}
				return serveSimulator(ctx, e, *addr, o, ff)
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

// fleetFlags are the flags that serve accounts beside the default dataset.
type fleetFlags struct {
	accounts, users, large, largeUsers int
	faults, revoked, revokeAfter       int
	oauth                              int
	file                               string
}

func addFleetFlags(fs *flag.FlagSet) *fleetFlags {
	ff := &fleetFlags{}
	fs.IntVar(&ff.accounts, "accounts", 0, "also serve this many accounts, acct_001 to acct_N, each under /accounts/<name> (0: the single dataset only)")
	fs.IntVar(&ff.users, "account-users", 1000, "users of each account")
	fs.IntVar(&ff.large, "large-accounts", 0, "make the first N accounts large (--large-users each)")
	fs.IntVar(&ff.largeUsers, "large-users", 100_000, "users of each large account")
	fs.IntVar(&ff.faults, "fault-accounts", 0, "apply the fault knobs (--fault-rate, --truncate-rate, --latency, --rate-limit-every...) to the last N accounts only")
	fs.IntVar(&ff.revoked, "revoked-accounts", 0, "revoke the grant of N accounts (those just before the fault accounts): every token refused with 401")
	fs.IntVar(&ff.revokeAfter, "revoke-after", 0, "revoke those accounts' grants after this many API requests each (0: from the start)")
	fs.IntVar(&ff.oauth, "oauth-accounts", 0, "give N accounts (those just after the large ones) an OAuth client and refresh token instead of a static token")
	fs.StringVar(&ff.file, "accounts-file", "", "write the accounts as JSON lines {name, api_url, token or oauth_*, users...} to this file (default: print them)")
	return ff
}

// validate reports the first bad fleet flag, naming it.
func (ff *fleetFlags) validate() error {
	switch {
	case ff.accounts < 0 || ff.accounts > 100_000:
		return errors.New("--accounts must be between 0 and 100000")
	case ff.users < 1 || ff.largeUsers < 1:
		return errors.New("--account-users and --large-users must be at least 1")
	case ff.large < 0 || ff.large > ff.accounts:
		return fmt.Errorf("--large-accounts must be between 0 and --accounts (%d)", ff.accounts)
	case ff.oauth < 0 || ff.large+ff.oauth > ff.accounts:
		return fmt.Errorf("--oauth-accounts must be between 0 and --accounts minus --large-accounts (%d)", ff.accounts-ff.large)
	case ff.faults < 0 || ff.faults > ff.accounts:
		return fmt.Errorf("--fault-accounts must be between 0 and --accounts (%d)", ff.accounts)
	case ff.revoked < 0 || ff.faults+ff.revoked > ff.accounts:
		return fmt.Errorf("--revoked-accounts must be between 0 and --accounts minus --fault-accounts (%d)", ff.accounts-ff.faults)
	case ff.revokeAfter < 0:
		return errors.New("--revoke-after must not be negative")
	case ff.accounts == 0 && ff.file != "":
		return errors.New("--accounts-file needs --accounts")
	}
	return nil
}

// simAccount is one account as the simulator serves it: a line of the
// accounts file.
type simAccount struct {
	Name              string `json:"name"`
	APIURL            string `json:"api_url"`
	Token             string `json:"token,omitempty"`
	OAuthTokenURL     string `json:"oauth_token_url,omitempty"`
	OAuthClientID     string `json:"oauth_client_id,omitempty"`
	OAuthClientSecret string `json:"oauth_client_secret,omitempty"`
	OAuthRefreshToken string `json:"oauth_refresh_token,omitempty"`
	Users             int    `json:"users"`
	Faults            bool   `json:"faults,omitempty"`
	Revoked           bool   `json:"revoked,omitempty"`
	RevokeAfter       int    `json:"revoke_after,omitempty"`
}

// fleetOptions lays the accounts out by position: the large ones first and
// the OAuth ones after them; the fault ones last and the revoked ones just
// before them. validate keeps each end's groups apart; a group from the
// start may overlap one from the end when there are few accounts.
func (ff *fleetFlags) fleetOptions(o apisim.Options) apisim.FleetOptions {
	fo := apisim.FleetOptions{Seed: o.Seed, Default: &o, Logger: o.Logger}
	healthy := apisim.Knobs{PageSizeCap: o.PageSizeCap, RateLimit: o.RateLimit, Churn: o.Churn}
	width := max(3, len(fmt.Sprint(ff.accounts)))
	for i := range ff.accounts {
		name := fmt.Sprintf("acct_%0*d", width, i+1)
		ao := apisim.AccountOptions{Name: name, Options: apisim.Options{Users: ff.users, TokenTTL: o.TokenTTL, Knobs: healthy}}
		if i < ff.large {
			ao.Users = ff.largeUsers
		}
		if i >= ff.large && i < ff.large+ff.oauth {
			tok := apisim.AccountToken(o.Seed, name)
			ao.ClientID, ao.ClientSecret, ao.RefreshToken = "usersync-sim", "cs-"+tok, "rt-"+tok
		}
		if i >= ff.accounts-ff.faults {
			ao.Knobs = o.Knobs
		}
		if i >= ff.accounts-ff.faults-ff.revoked && i < ff.accounts-ff.faults {
			ao.Revoked, ao.RevokeAfter = ff.revokeAfter == 0, ff.revokeAfter
		}
		fo.Accounts = append(fo.Accounts, ao)
	}
	return fo
}

// simAccounts describes the fleet's accounts for a script to register.
func (ff *fleetFlags) simAccounts(baseURL string, fo apisim.FleetOptions, fleet *apisim.Fleet) []simAccount {
	out := make([]simAccount, 0, len(fo.Accounts))
	for i, a := range fleet.Accounts() {
		ao := fo.Accounts[i]
		sa := simAccount{Name: a.Name, APIURL: baseURL + a.Path, Token: a.Token, Users: ao.Users,
			Faults: i >= ff.accounts-ff.faults, Revoked: ao.Revoked}
		if !ao.Revoked {
			sa.RevokeAfter = ao.RevokeAfter
		}
		if ao.ClientID != "" {
			sa.OAuthTokenURL = sa.APIURL + "/oauth/token"
			sa.OAuthClientID, sa.OAuthClientSecret, sa.OAuthRefreshToken = ao.ClientID, ao.ClientSecret, ao.RefreshToken
		}
		out = append(out, sa)
	}
	return out
}

// writeAccounts prints the accounts as JSON lines, or writes them to path
// (through a temporary file renamed into place, so a script waiting for the
// file never reads half of it).
func writeAccounts(stdout io.Writer, path string, accts []simAccount) error {
	if path == "" {
		return encodeAccounts(stdout, accts)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".accounts-*")
	if err != nil {
		return fmt.Errorf("--accounts-file: %w", err)
	}
	// After the rename there is nothing left to remove: only a failure's
	// leftover is.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := encodeAccounts(tmp, accts); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("--accounts-file: writing: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--accounts-file: writing: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--accounts-file: %w", err)
	}
	return nil
}

func encodeAccounts(w io.Writer, accts []simAccount) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, a := range accts {
		if err := enc.Encode(a); err != nil {
			return fmt.Errorf("encoding account %s: %w", a.Name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the accounts: %w", err)
	}
	return nil
}

// simulator is what serveSimulator serves: one dataset, or a fleet.
type simulator struct {
	handler http.Handler
	stats   func() apisim.Stats
	fleet   *apisim.Fleet
	fo      apisim.FleetOptions
}

func newSimulator(o apisim.Options, ff *fleetFlags) simulator {
	if ff.accounts == 0 {
		sim := apisim.New(o)
		return simulator{handler: sim, stats: sim.Stats}
	}
	fo := ff.fleetOptions(o)
	fleet := apisim.NewFleet(fo)
	return simulator{handler: fleet, stats: fleet.Stats, fleet: fleet, fo: fo}
}

func serveSimulator(ctx context.Context, e *env, addr string, o apisim.Options, ff *fleetFlags) error {
	o.Logger = e.logger
	start := time.Now()
	sim := newSimulator(o, ff)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return usageError{fmt.Errorf("--addr: %w", err)}
	}
	url := "http://" + ln.Addr().String()
	if sim.fleet != nil {
		if err := writeAccounts(e.stdout, ff.file, ff.simAccounts(url, sim.fo, sim.fleet)); err != nil {
			_ = ln.Close()
			return err
		}
	}
	srv := &http.Server{Handler: sim.handler, ReadHeaderTimeout: 10 * time.Second}
	e.logger.Info("simulated API listening", "addr", ln.Addr().String(), "url", url,
		"users", o.Users, "seed", o.Seed, "accounts", ff.accounts, "startup_ms", time.Since(start).Milliseconds())
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
	st := sim.stats()
	e.logger.Info("simulated API stopped", "requests", st.Requests, "rate_limited", st.RateLimited)
	return nil
}
