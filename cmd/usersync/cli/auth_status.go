package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/jsonapi/oauthlogin"
	"io"
	"time"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/warehouse/tokens"
)

func authStatusCommand() command {
	return command{
		name:    "auth status",
		summary: "show whether an OAuth token is stored, its scope, when its access token expires, when its refresh token was last rotated and the last refresh that failed",
		details: `Reads the oauth_tokens row of USERSYNC_OAUTH_TOKEN_URL and
USERSYNC_OAUTH_CLIENT_ID. The scope is the one the token endpoint said the
grant holds. A refresh the token endpoint refused (invalid_grant: revoked or
expired) shows until a refresh or usersync auth login succeeds. Never prints
a token.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "print as JSON")
			return func(ctx context.Context, e *env, _ []string) error {
				if e.cfg.OAuthTokenURL == "" || e.cfg.OAuthClientID == "" {
					return usageError{errors.New("OAuth is not configured: set USERSYNC_OAUTH_TOKEN_URL and USERSYNC_OAUTH_CLIENT_ID")}
				}
				pool, store, err := openStore(ctx, e, 2)
				if err != nil {
					return err
				}
				defer pool.Close()
				ts, err := tokenStore(e, store)
				if err != nil {
					return err
				}
				info, err := ts.Info(ctx)
				if err != nil {
					return err
				}
				if *asJSON {
					out := struct {
						ClientID string `json:"client_id"`
						TokenURL string `json:"token_url"`
						tokens.Info
						FallbackConfigured bool `json:"refresh_token_in_environment"`
					}{e.cfg.OAuthClientID, oauthlogin.RedactQuery(e.cfg.OAuthTokenURL), info, e.cfg.OAuthRefreshToken != ""}
					return writeJSON(e.stdout, out)
				}
				printAuthStatus(e.stdout, e.cfg, store.Schema(), jobs.LoginCommand(e.account), info, time.Now())
				return nil
			}
		},
	}
}

// printAuthStatus prints info of the grant of cfg kept in schemaName; login
// is the command that stores one (usersync auth login [--account NAME]).
func printAuthStatus(w io.Writer, cfg config.Config, schemaName, login string, info tokens.Info, now time.Time) {
	fmt.Fprintf(w, "client         %s at %s\n", cfg.OAuthClientID, oauthlogin.RedactQuery(cfg.OAuthTokenURL))
	if !info.Stored {
		fmt.Fprintf(w, "stored token   none in %s.oauth_tokens: run %s\n", schemaName, login)
	} else {
		fmt.Fprintf(w, "stored token   yes, in %s.oauth_tokens\n", schemaName)
		if f := info.RefreshFailure; f != nil {
			fmt.Fprintf(w, "last refresh   %s\n", refreshFailureLine(*f, login, now))
		}
		printAccessExpiry(w, info, now)
		if info.RotatedAt != nil {
			ago := max(now.Sub(*info.RotatedAt), 0).Round(time.Second) // the database's clock may be ahead
			fmt.Fprintf(w, "refresh token  last rotated %s (%s ago)\n", info.RotatedAt.UTC().Format(time.RFC3339), ago)
		}
		if line := tokens.ScopeLine(info.Scope); line != "" {
			fmt.Fprintf(w, "scope          %s\n", line)
		}
	}
	fallback := "USERSYNC_OAUTH_REFRESH_TOKEN not set"
	if cfg.OAuthRefreshToken != "" {
		fallback = "USERSYNC_OAUTH_REFRESH_TOKEN set (used when the stored token is refused)"
	}
	fmt.Fprintf(w, "fallback       %s\n", fallback)
}

// refreshFailureLine says when the last refresh failed, why and what to do
// (login: the command that stores a new grant).
func refreshFailureLine(f tokens.RefreshFailure, login string, now time.Time) string {
	ago := max(now.Sub(f.At), 0).Round(time.Second)
	remedy := "run " + login + " (the grant was revoked or expired; a running worker picks up the new one)"
	if f.Code == "" {
		remedy = "the worker retries; check USERSYNC_OAUTH_TOKEN_URL and the network if it goes on"
	}
	return fmt.Sprintf("FAILED %s (%s ago): %s; %s", f.At.UTC().Format(time.RFC3339), ago, f.Error, remedy)
}

// printAccessExpiry prints the stored access token's expiry; after a
// refused refresh, the grant it came from is gone, and so is it, likely.
func printAccessExpiry(w io.Writer, info tokens.Info, now time.Time) {
	if info.AccessExpiresAt == nil {
		fmt.Fprintln(w, "access token   expiry unknown")
		return
	}
	verb := "expires"
	if info.AccessExpiresAt.Before(now) {
		verb = "expired"
	}
	refused := ""
	if f := info.RefreshFailure; f != nil && f.Code != "" {
		refused = "; its grant was refused since, so the API likely refuses it too"
	}
	fmt.Fprintf(w, "access token   %s %s (%s)%s\n", verb, info.AccessExpiresAt.UTC().Format(time.RFC3339), relative(*info.AccessExpiresAt, now), refused)
}

// relative says how far t is from now: "in 1h59m" or "3m ago".
func relative(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	if d >= 0 {
		return "in " + d.String()
	}
	return (-d).String() + " ago"
}
