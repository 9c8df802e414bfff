package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/jsonapi/oauthlogin"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/tokens"
)

// defaultRedirectPort is the port of the loopback redirect URI,
// http://127.0.0.1:8976/callback, to register with the application.
const defaultRedirectPort = 8976

func authLoginCommand() command {
	return command{
		name:    "auth login",
		summary: "authorize usersync with the API once (OAuth authorization code) and store its refresh token in the warehouse",
		details: `Runs the OAuth 2 authorization-code flow with state and PKCE (S256): prints
the authorize URL (USERSYNC_OAUTH_AUTHORIZE_URL) and opens it in a browser when
there is one ($BROWSER, open, or xdg-open with a display; the opener is given a
page only this user can read that leads to the URL, never the URL itself, which
other local users could read on its command line), waits for the redirect on
http://127.0.0.1:PORT/callback (a listener on loopback only, which ignores
callbacks without this login's state, as any web page can send one, until
--timeout), exchanges the code at
USERSYNC_OAUTH_TOKEN_URL with the client id and secret, and stores the refresh
token, the access token and its expiry in the oauth_tokens table, where the
worker's token rotation reads them: the worker then needs no
USERSYNC_OAUTH_REFRESH_TOKEN. Register the redirect URI with the application.
Run it again to re-authorize. No token is ever printed.

With --no-browser nothing listens: open the URL anywhere, approve, and paste
the address the browser was sent to (or the code it shows).`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			port := fs.Int("redirect-port", defaultRedirectPort, "port of the redirect URI http://127.0.0.1:PORT/callback (0: any free port, if the application accepts any)")
			noBrowser := fs.Bool("no-browser", false, "open no browser and listen for no redirect: paste the address or code the browser ends on")
			follow := fs.Bool("follow-redirect", false, "for demos and tests: fetch the authorize URL here and follow its redirect (consent without a browser; loopback endpoints only)")
			timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the browser's redirect")
			return func(ctx context.Context, e *env, _ []string) error {
				return authLogin(ctx, e, loginOptions{port: *port, noBrowser: *noBrowser, follow: *follow, timeout: *timeout})
			}
		},
	}
}

type loginOptions struct {
	port      int
	noBrowser bool
	follow    bool
	timeout   time.Duration
}

func (o loginOptions) check(cfg config.Config) error {
	switch {
	case o.port < 0 || o.port > 65535:
		return fmt.Errorf("--redirect-port must be between 0 and 65535, not %d", o.port)
	case o.timeout <= 0:
		return errors.New("--timeout must be positive")
	case o.noBrowser && o.follow:
		return errors.New("--no-browser and --follow-redirect exclude each other")
	case o.noBrowser && o.port == 0:
		return errors.New("--no-browser needs a fixed --redirect-port: the redirect URI must be the registered one")
	case o.follow:
		for _, u := range []struct{ name, url string }{
			{"USERSYNC_OAUTH_AUTHORIZE_URL", cfg.AuthorizeURL()}, {"USERSYNC_OAUTH_TOKEN_URL", cfg.OAuthTokenURL},
		} {
			if p, err := url.Parse(u.url); err != nil || !config.IsLoopback(p.Hostname()) {
				return fmt.Errorf("--follow-redirect is for demos and tests against a local simulator; %s is not on a loopback host", u.name)
			}
		}
	}
	return nil
}

func authLogin(ctx context.Context, e *env, opts loginOptions) error {
	if err := e.cfg.RequireOAuthClient(); err != nil {
		return usageError{err}
	}
	if err := opts.check(e.cfg); err != nil {
		return usageError{err}
	}
	pool, store, err := openStore(ctx, e, 2)
	if err != nil {
		return err
	}
	defer pool.Close()

	ln, port, err := oauthlogin.ListenRedirect(ctx, opts.port, opts.noBrowser)
	if err != nil {
		return err
	}
	if ln != nil {
		defer func() { _ = ln.Close() }() // usually closed already, by the callback server's shutdown
	}
	redirectURI := "http://127.0.0.1:" + strconv.Itoa(port) + "/callback"
	req, err := jsonapi.NewAuthorizationRequest(e.cfg.AuthorizeURL(), e.cfg.OAuthClientID, redirectURI, e.cfg.OAuthScopes)
	if err != nil {
		return usageError{fmt.Errorf("USERSYNC_OAUTH_AUTHORIZE_URL: %w", err)}
	}
	code, err := obtainCode(ctx, e, ln, req, redirectURI, opts)
	if err != nil {
		return err
	}
	return exchangeAndStore(ctx, e, store, code, redirectURI, req.Verifier)
}

// obtainCode sends the operator (or, with --follow-redirect, itself) to the
// authorize URL and returns the code the redirect brings back.
func obtainCode(ctx context.Context, e *env, ln net.Listener, req jsonapi.AuthorizationRequest, redirectURI string, opts loginOptions) (string, error) {
	switch {
	case opts.noBrowser:
		fmt.Fprintf(e.stdout, "Open this URL in a browser, sign in as a user who can see every user, and approve:\n\n  %s\n\n", req.URL)
		fmt.Fprintf(e.stdout, "The browser then goes to %s, which fails to load: paste that whole address (or the code) here: ", redirectURI)
		if e.stdin == nil {
			return "", usageError{errors.New("--no-browser reads the code from standard input, and there is none")}
		}
		return oauthlogin.ReadPastedCode(ctx, e.stdin, req)
	default:
		if opts.follow {
			fmt.Fprintf(e.stdout, "Authorizing at %s (following its redirect: --follow-redirect)\n", oauthlogin.RedactQuery(e.cfg.AuthorizeURL()))
		} else {
			fmt.Fprintf(e.stdout, "Open this URL in a browser, sign in as a user who can see every user, and approve:\n\n  %s\n\nWaiting for the redirect to %s …\n", req.URL, redirectURI)
			opened, cleanup := oauthlogin.OpenBrowser(ctx, e.getenv, e.logger, req.URL)
			defer cleanup()
			if opened {
				fmt.Fprintln(e.stdout, "(opened in your browser)")
			}
		}
		return oauthlogin.AwaitCallback(ctx, ln, req, opts.follow, opts.timeout)
	}
}

// exchangeAndStore exchanges the code for a grant, which the token store
// keeps, and says what was stored.
func exchangeAndStore(ctx context.Context, e *env, store *warehouse.Store, code, redirectURI, verifier string) error {
	ts, err := tokenStore(e, store)
	if err != nil {
		return err
	}
	o, err := jsonapi.NewOAuth(jsonapi.OAuthConfig{TokenURL: e.cfg.OAuthTokenURL, URLSetting: "USERSYNC_OAUTH_TOKEN_URL", ClientID: e.cfg.OAuthClientID,
		ClientSecret: e.cfg.OAuthClientSecret, Store: ts, UserAgent: UserAgent(), Logger: e.logger})
	if err != nil {
		return usageError{fmt.Errorf("configuring OAuth: %w", err)}
	}
	grant, err := o.ExchangeCode(ctx, code, redirectURI, verifier)
	if err != nil {
		return oauthlogin.ExplainExchange(err, jobs.LoginCommand(e.account))
	}
	fmt.Fprintf(e.stdout, "Authorized: the refresh token is stored in %s.oauth_tokens for client %s at %s.\n",
		store.Schema(), e.cfg.OAuthClientID, oauthlogin.RedactQuery(e.cfg.OAuthTokenURL))
	if !grant.ExpiresAt.IsZero() {
		fmt.Fprintf(e.stdout, "The access token expires %s; the worker refreshes it and stores each rotated refresh token.\n",
			grant.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if line := tokens.ScopeLine(grant.Scope); line != "" {
		fmt.Fprintf(e.stdout, "Scope granted: %s\n", line)
	}
	fmt.Fprintln(e.stdout, "Next: usersync worker (USERSYNC_OAUTH_REFRESH_TOKEN is not needed).")
	return nil
}
