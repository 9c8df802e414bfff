package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/usersync/usersync/sync/warehouse/tokens"
)

func authStatusCommand() command {
	return command{
		name:    "auth status",
		summary: "show whether an OAuth token is stored, when its access token expires and when its refresh token was last rotated",
		details: `Reads the oauth_tokens row of USERSYNC_OAUTH_TOKEN_URL and
USERSYNC_OAUTH_CLIENT_ID. Never prints a token.`,
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
					}{e.cfg.OAuthClientID, redactQuery(e.cfg.OAuthTokenURL), info, e.cfg.OAuthRefreshToken != ""}
					enc := json.NewEncoder(e.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(out)
				}
				printAuthStatus(e.stdout, e.cfg, store.Schema(), info, time.Now())
				return nil
			}
		},
	}
}

func printAuthStatus(w io.Writer, cfg Config, schemaName string, info tokens.Info, now time.Time) {
	fmt.Fprintf(w, "client         %s at %s\n", cfg.OAuthClientID, redactQuery(cfg.OAuthTokenURL))
	if !info.Stored {
		fmt.Fprintf(w, "stored token   none in %s.oauth_tokens: run usersync auth login\n", schemaName)
	} else {
		fmt.Fprintf(w, "stored token   yes, in %s.oauth_tokens\n", schemaName)
		if info.AccessExpiresAt != nil {
			verb := "expires"
			if info.AccessExpiresAt.Before(now) {
				verb = "expired"
			}
			fmt.Fprintf(w, "access token   %s %s (%s)\n", verb, info.AccessExpiresAt.UTC().Format(time.RFC3339), relative(*info.AccessExpiresAt, now))
		} else {
			fmt.Fprintln(w, "access token   expiry unknown")
		}
		if info.RotatedAt != nil {
			ago := max(now.Sub(*info.RotatedAt), 0).Round(time.Second) // the database's clock may be ahead
			fmt.Fprintf(w, "refresh token  last rotated %s (%s ago)\n", info.RotatedAt.UTC().Format(time.RFC3339), ago)
		}
	}
	fallback := "USERSYNC_OAUTH_REFRESH_TOKEN not set"
	if cfg.OAuthRefreshToken != "" {
		fallback = "USERSYNC_OAUTH_REFRESH_TOKEN set (used when the stored token is refused)"
	}
	fmt.Fprintf(w, "fallback       %s\n", fallback)
}

// relative says how far t is from now: "in 1h59m" or "3m ago".
func relative(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	if d >= 0 {
		return "in " + d.String()
	}
	return (-d).String() + " ago"
}
