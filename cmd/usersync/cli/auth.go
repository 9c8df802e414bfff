package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse"
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

func (o loginOptions) check(cfg Config) error {
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
			{"USERSYNC_OAUTH_AUTHORIZE_URL", cfg.authorizeURL()}, {"USERSYNC_OAUTH_TOKEN_URL", cfg.OAuthTokenURL},
		} {
			if p, err := url.Parse(u.url); err != nil || !isLoopback(p.Hostname()) {
				return fmt.Errorf("--follow-redirect is for demos and tests against a local simulator; %s is not on a loopback host", u.name)
			}
		}
	}
	return nil
}

func authLogin(ctx context.Context, e *env, opts loginOptions) error {
	if err := e.cfg.requireOAuthClient(); err != nil {
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

	var ln net.Listener
	port := opts.port
	if !opts.noBrowser {
		ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("listening for the redirect on 127.0.0.1:%d: the port is in use; stop what holds it or pick another with --redirect-port (and register that redirect URI)", port)
		}
		if err != nil {
			return fmt.Errorf("listening for the redirect: %w", err)
		}
		defer func() { _ = ln.Close() }() // usually closed already, by the callback server's shutdown
		port = ln.Addr().(*net.TCPAddr).Port
	}
	redirectURI := "http://127.0.0.1:" + strconv.Itoa(port) + "/callback"
	req, err := jsonapi.NewAuthorizationRequest(e.cfg.authorizeURL(), e.cfg.OAuthClientID, redirectURI, e.cfg.OAuthScopes)
	if err != nil {
		return usageError{fmt.Errorf("USERSYNC_OAUTH_AUTHORIZE_URL: %w", err)}
	}

	var code string
	switch {
	case opts.noBrowser:
		fmt.Fprintf(e.stdout, "Open this URL in a browser, sign in as a user who can see every user, and approve:\n\n  %s\n\n", req.URL)
		fmt.Fprintf(e.stdout, "The browser then goes to %s, which fails to load: paste that whole address (or the code) here: ", redirectURI)
		code, err = readPastedCode(ctx, e.stdin, req)
	default:
		if opts.follow {
			fmt.Fprintf(e.stdout, "Authorizing at %s (following its redirect: --follow-redirect)\n", redactQuery(e.cfg.authorizeURL()))
		} else {
			fmt.Fprintf(e.stdout, "Open this URL in a browser, sign in as a user who can see every user, and approve:\n\n  %s\n\nWaiting for the redirect to %s …\n", req.URL, redirectURI)
			opened, cleanup := openBrowser(ctx, e, req.URL)
			defer cleanup()
			if opened {
				fmt.Fprintln(e.stdout, "(opened in your browser)")
			}
		}
		code, err = awaitCallback(ctx, e, ln, req, opts)
	}
	if err != nil {
		return err
	}

	tokens := store.TokenStore(e.cfg.OAuthTokenURL, e.cfg.OAuthClientID)
	o, err := jsonapi.NewOAuth(jsonapi.OAuthConfig{TokenURL: e.cfg.OAuthTokenURL, ClientID: e.cfg.OAuthClientID,
		ClientSecret: e.cfg.OAuthClientSecret, Store: tokens, UserAgent: UserAgent(), Logger: e.logger})
	if err != nil {
		return usageError{fmt.Errorf("configuring OAuth: %w", err)}
	}
	grant, err := o.ExchangeCode(ctx, code, redirectURI, req.Verifier)
	if err != nil {
		return explainExchange(err)
	}
	fmt.Fprintf(e.stdout, "Authorized: the refresh token is stored in %s.oauth_tokens for client %s at %s.\n",
		store.Schema(), e.cfg.OAuthClientID, redactQuery(e.cfg.OAuthTokenURL))
	if !grant.ExpiresAt.IsZero() {
		fmt.Fprintf(e.stdout, "The access token expires %s; the worker refreshes it and stores each rotated refresh token.\n",
			grant.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if grant.Scope != "" {
		fmt.Fprintf(e.stdout, "Scope granted: %s\n", grant.Scope)
	}
	fmt.Fprintln(e.stdout, "Next: usersync worker (USERSYNC_OAUTH_REFRESH_TOKEN is not needed).")
	return nil
}

// explainExchange turns the token endpoint's refusals into one line that
// says what to do.
func explainExchange(err error) error {
	var ae *jsonapi.AuthError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Code {
	case "invalid_grant":
		return errors.New("exchanging the code: the token endpoint refused it (invalid_grant): it was already used, expired, or was issued for another redirect URI or PKCE verifier; run usersync auth login again")
	case "invalid_client", "unauthorized_client":
		return fmt.Errorf("exchanging the code: the token endpoint refused the client (%s): check USERSYNC_OAUTH_CLIENT_ID and USERSYNC_OAUTH_CLIENT_SECRET", ae.Code)
	}
	return err
}

// callbackResult is what the redirect listener (or --follow-redirect's
// fetch) concluded.
type callbackResult struct {
	code string
	err  error
}

// awaitCallback serves the redirect URI on ln until a callback with this
// login's state arrives, the timeout passes or ctx ends. A callback with
// another state, or none, is answered and ignored: any web page can send
// one, and it must not end the login (the timeout's error counts them).
// With --follow-redirect it fetches the authorize URL itself, letting it
// redirect only to ln.
func awaitCallback(ctx context.Context, e *env, ln net.Listener, req jsonapi.AuthorizationRequest, opts loginOptions) (string, error) {
	results := make(chan callbackResult, 2)
	var ignored atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		code, err := req.Callback(r.URL.Query())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		if errors.Is(err, jsonapi.ErrStateMismatch) {
			ignored.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintln(w, "This is not the redirect of the usersync login under way (a stale tab, or a forged request); it was ignored.")
			return
		}
		if err != nil {
			// A fixed text: the query's words (an error description) are
			// the sender's, and shown on the command line only, cleaned.
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintln(w, "usersync auth login failed; the command line says why. You may close this tab.")
		} else {
			fmt.Fprintln(w, "usersync is authorized; the command line finishes the login. You may close this tab.")
		}
		select {
		case results <- callbackResult{code, err}:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if opts.follow {
		go func() {
			if err := followAuthorize(ctx, req.URL, "http://"+ln.Addr().String()); err != nil {
				select {
				case results <- callbackResult{err: err}:
				default:
				}
			}
		}()
	}
	timer := time.NewTimer(opts.timeout)
	defer timer.Stop()
	select {
	case r := <-results:
		if r.err != nil {
			return "", callbackError(r.err)
		}
		return r.code, nil
	case <-timer.C:
		if n := ignored.Load(); n > 0 {
			return "", fmt.Errorf("waiting for the redirect: no callback with this login's state within %s (--timeout); %d with another state or none were ignored (a stale tab, a forged request, or a server that drops the state); no token was stored", opts.timeout, n)
		}
		return "", fmt.Errorf("waiting for the redirect: no callback within %s (--timeout); no token was stored", opts.timeout)
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for the redirect: %w", ctx.Err())
	}
}

// callbackError words the callback's refusals for the operator.
func callbackError(err error) error {
	var ae *jsonapi.AuthorizeError
	switch {
	case errors.Is(err, jsonapi.ErrStateMismatch):
		return fmt.Errorf("checking the callback: %w; no token was stored", err)
	case errors.As(err, &ae) && ae.Code == "access_denied":
		return errors.New("authorization denied: consent was refused at the authorize page (access_denied); no token was stored")
	case errors.As(err, &ae):
		return fmt.Errorf("authorizing: %w; no token was stored", err)
	}
	return err
}

// followAuthorize fetches the authorize URL and follows its redirects, to
// its own origin or the listener's only, as a browser that approves at once
// would. The listener's handler reports the outcome; this reports only a
// failure to get there.
func followAuthorize(ctx context.Context, authorizeURL, listener string) error {
	au, err := url.Parse(authorizeURL)
	if err != nil {
		return fmt.Errorf("following the authorize URL: %w", err)
	}
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		origin := r.URL.Scheme + "://" + r.URL.Host
		if len(via) >= 5 || (origin != listener && origin != au.Scheme+"://"+au.Host) {
			return fmt.Errorf("the authorize endpoint redirected to %s, neither itself nor this login's redirect URI", origin)
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authorizeURL, nil)
	if err != nil {
		return fmt.Errorf("following the authorize URL: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL carries the state
		}
		return fmt.Errorf("following the authorize URL: %w", err)
	}
	defer resp.Body.Close()
	if got := resp.Request.URL.Scheme + "://" + resp.Request.URL.Host; got != listener {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("following the authorize URL: it answered %s without redirecting: %s", resp.Status, oneLine(string(body)))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil
}

// readPastedCode reads one line: the address the browser was sent to
// (whose state is checked) or a bare code.
func readPastedCode(ctx context.Context, stdin io.Reader, req jsonapi.AuthorizationRequest) (string, error) {
	if stdin == nil {
		return "", usageError{errors.New("--no-browser reads the code from standard input, and there is none")}
	}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	var line string
	select {
	case line = <-lines:
	case <-ctx.Done():
		return "", fmt.Errorf("reading the code: %w", ctx.Err())
	}
	if line == "" {
		return "", errors.New("reading the code: nothing was pasted; no token was stored")
	}
	if u, err := url.Parse(line); err == nil && u.RawQuery != "" {
		code, err := req.Callback(u.Query())
		if err != nil {
			return "", callbackError(err)
		}
		return code, nil
	}
	if strings.ContainsAny(line, " \t&=?/") {
		return "", errors.New("reading the code: paste the whole address the browser went to, or only the value of its code parameter")
	}
	return line, nil
}

// openBrowser opens u in a browser without putting u on a command line,
// where other local users would read it (ps, /proc) and could use its
// state to race their own authorization in: it writes a page that
// redirects to u into a file only this user can read (0600, in a 0700
// folder) and gives the opener the file's path. The opener is $BROWSER,
// else open (macOS), else xdg-open when a display is set. It never fails:
// the URL is printed anyway. cleanup removes the file; call it once the
// login is over.
func openBrowser(ctx context.Context, e *env, u string) (opened bool, cleanup func()) {
	cleanup = func() {}
	opener, _, _ := strings.Cut(strings.TrimSpace(e.getenv("BROWSER")), ":") // a list, by convention: its first
	switch {
	case opener != "":
	case runtime.GOOS == "darwin":
		opener = "open"
	case runtime.GOOS == "linux" && (e.getenv("DISPLAY") != "" || e.getenv("WAYLAND_DISPLAY") != ""):
		opener = "xdg-open"
	default:
		return false, cleanup
	}
	path, err := exec.LookPath(opener)
	if err != nil {
		return false, cleanup
	}
	dir, err := os.MkdirTemp("", "usersync-login-")
	if err != nil {
		e.logger.DebugContext(ctx, "could not write the page that opens the browser", "err", err.Error())
		return false, cleanup
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	page := filepath.Join(dir, "login.html")
	target := html.EscapeString(u)
	body := `<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">` +
		`<meta http-equiv="refresh" content="0;url=` + target + `"><title>usersync auth login</title>` +
		`<p><a href="` + target + `">Continue to the authorization page</a></p>` + "\n"
	if err := os.WriteFile(page, []byte(body), 0o600); err != nil {
		e.logger.DebugContext(ctx, "could not write the page that opens the browser", "err", err.Error())
		return false, cleanup
	}
	cmd := exec.CommandContext(context.WithoutCancel(ctx), path, page) //nolint:gosec // G204: the opener is the user's own ($BROWSER) or a fixed name; the argument a file path
	if err := cmd.Start(); err != nil {
		e.logger.DebugContext(ctx, "could not open a browser", "opener", opener, "err", err.Error())
		return false, cleanup
	}
	go func() { _ = cmd.Wait() }()
	return true, cleanup
}

// redactQuery drops a URL's query and userinfo, for messages.
func redactQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

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
				info, err := store.TokenStore(e.cfg.OAuthTokenURL, e.cfg.OAuthClientID).Info(ctx)
				if err != nil {
					return err
				}
				if *asJSON {
					out := struct {
						ClientID string `json:"client_id"`
						TokenURL string `json:"token_url"`
						warehouse.TokenInfo
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

func printAuthStatus(w io.Writer, cfg Config, schemaName string, info warehouse.TokenInfo, now time.Time) {
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
