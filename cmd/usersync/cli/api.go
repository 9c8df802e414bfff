package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/tokens"
)

// The warehouse keeps the OAuth grant: the client finds the GrantStore by a
// type assertion at run time, so a method that drifted would go unnoticed
// without this.
var _ jsonapi.GrantStore = (*tokens.Store)(nil)

// tokenStore is the store of the configured OAuth credential in the warehouse.
func tokenStore(e *env, store *warehouse.Store) (*tokens.Store, error) {
	ts, err := tokens.New(store.Pool(), store.Schema(), e.cfg.OAuthTokenURL, e.cfg.OAuthClientID)
	if err != nil {
		return nil, err
	}
	return ts.WithKey(e.fleetConfig().SecretsKey), nil
}

// newAPIClient builds the API client from the configuration: a static token,
// or OAuth whose rotated refresh token lives in the warehouse's oauth_tokens.
func newAPIClient(ctx context.Context, e *env, store *warehouse.Store) (*jsonapi.Client, error) {
	return buildAPIClient(ctx, e, store, 0)
}

// newWorkerAPIClient is newAPIClient for a worker's jobs: a rate-limit wait
// longer than USERSYNC_RATE_LIMIT_WAIT ends the run, whose job snoozes,
// rather than hold a worker slot that another account's job could use.
func newWorkerAPIClient(ctx context.Context, e *env, store *warehouse.Store) (*jsonapi.Client, error) {
	return buildAPIClient(ctx, e, store, e.cfg.RateLimitWait)
}

// buildAPIClient builds the API client; maxWait is
// jsonapi.Options.MaxRateLimitWait (0: the client's default).
func buildAPIClient(ctx context.Context, e *env, store *warehouse.Store, maxWait time.Duration) (*jsonapi.Client, error) {
	if err := e.cfg.RequireAPI(); err != nil {
		return nil, usageError{err}
	}
	auth, err := staticAuth(e)
	if err != nil {
		return nil, err
	}
	if e.cfg.OAuthTokenURL != "" {
		if auth, err = oauthFor(ctx, e, store); err != nil {
			return nil, err
		}
	}
	c, err := jsonapi.NewClient(jsonapi.Options{
		BaseURL: e.cfg.APIURL, BaseURLSetting: "USERSYNC_API_URL", Auth: auth, UserAgent: UserAgent(), Logger: e.logger, MaxBodyBytes: e.cfg.MaxResponseBytes, MaxBodyBytesInFlight: e.cfg.MaxResponseMemory, Budget: e.cfg.APIBudget,
		MaxRateLimitWait: maxWait, Bodies: e.bodies,
	})
	if err != nil {
		return nil, usageError{fmt.Errorf("configuring the API client: %w", err)}
	}
	return c, nil
}

// oauthFor is the OAuth authenticator of e's account, whose rotated refresh
// token is kept in store's oauth_tokens. When none is stored and none is
// configured, a command exits 2 saying to run usersync auth login, and a
// worker (e.logins set) works on, its account's jobs waiting for the login
// (awaitLogin).
func oauthFor(ctx context.Context, e *env, store *warehouse.Store) (jsonapi.Authenticator, error) {
	tokens, err := tokenStore(e, store)
	if err != nil {
		return nil, err
	}
	stored := ""
	if e.cfg.OAuthRefreshToken == "" {
		if stored, err = tokens.Load(ctx); err != nil {
			return nil, err
		}
		if stored == "" && e.logins == nil {
			return nil, usageError{fmt.Errorf("no OAuth refresh token: none is stored for this client and token URL, and USERSYNC_OAUTH_REFRESH_TOKEN is not set; run %s",
				jobs.LoginCommand(e.account))}
		}
	}
	o, err := jsonapi.NewOAuth(jsonapi.OAuthConfig{
		TokenURL: e.cfg.OAuthTokenURL, URLSetting: "USERSYNC_OAUTH_TOKEN_URL", ClientID: e.cfg.OAuthClientID,
		ClientSecret: e.cfg.OAuthClientSecret, RefreshToken: e.cfg.OAuthRefreshToken, Store: tokens,
		UserAgent: UserAgent(), Logger: e.logger,
	})
	if err != nil {
		return nil, usageError{fmt.Errorf("configuring OAuth: %w", err)}
	}
	if e.cfg.OAuthRefreshToken == "" && stored == "" {
		return &awaitLogin{oauth: o, store: tokens, waits: e.logins, account: jobs.AccountName(e.account), logger: e.logger}, nil
	}
	return o, nil
}

// authRemedy says what to do when the API or its token endpoint refuses the
// configured credentials (a jsonapi.AuthError), for logs, errors and status.
func authRemedy(cfg config.Config) string {
	if cfg.OAuthTokenURL != "" {
		return "run usersync auth login to authorize usersync again (the refresh token was revoked or expired; a running worker picks up the new one)"
	}
	return "check USERSYNC_API_TOKEN (or USERSYNC_API_TOKEN_FILE): the API refuses it; write a valid token to USERSYNC_API_TOKEN_FILE (a running worker reads it again, no restart) or set USERSYNC_API_TOKEN and restart the worker"
}

// withAuthRemedy appends authRemedy to an error whose credentials were
// refused, so the one line a command prints says what to do.
func withAuthRemedy(cfg config.Config, err error) error {
	var ae *jsonapi.AuthError
	if errors.As(err, &ae) {
		return fmt.Errorf("%w; %s", err, authRemedy(cfg))
	}
	return err
}

// staticAuth is the static token's Authenticator: one that reads
// USERSYNC_API_TOKEN_FILE again after a 401 when the token came from that
// file (so a replaced token needs no restart), else the token as given.
func staticAuth(e *env) (jsonapi.Authenticator, error) {
	static := jsonapi.StaticToken(e.cfg.APIToken)
	if e.getenv == nil || e.cfg.APIToken == "" || e.getenv("USERSYNC_API_TOKEN_FILE") == "" {
		return static, nil
	}
	auth, err := jsonapi.FileToken(e.getenv("USERSYNC_API_TOKEN_FILE"))
	if err != nil {
		return nil, usageError{fmt.Errorf("USERSYNC_API_TOKEN_FILE: %w", err)}
	}
	if tok, _ := auth.Token(context.Background()); tok != e.cfg.APIToken {
		return static, nil // another account's token, not the file's
	}
	return auth, nil
}
