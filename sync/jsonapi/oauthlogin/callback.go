// Package oauthlogin is the operator's side of the OAuth authorization-code
// flow of usersync auth login: the loopback redirect listener, a pasted
// redirect, the browser, without a token ever shown.
package oauthlogin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/usersync/usersync/sync/jsonapi"
)

// callbackResult is what the redirect listener (or --follow-redirect's
// fetch) concluded.
type callbackResult struct {
	code string
	err  error
}

// AwaitCallback serves the redirect URI on ln until a callback with this
// login's state arrives, the timeout passes or ctx ends. A callback with
// another state, or none, is answered and ignored: any web page can send
// one, and it must not end the login (the timeout's error counts them).
// With follow (--follow-redirect) it fetches the authorize URL itself, letting it
// redirect only to ln.
func AwaitCallback(ctx context.Context, ln net.Listener, req jsonapi.AuthorizationRequest, follow bool, timeout time.Duration) (string, error) {
	results := make(chan callbackResult, 2)
	var ignored atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", callbackHandler(req, results, &ignored))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if follow {
		go func() {
			if err := followAuthorize(ctx, req.URL, "http://"+ln.Addr().String()); err != nil {
				select {
				case results <- callbackResult{err: err}:
				default:
				}
			}
		}()
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-results:
		if r.err != nil {
			return "", callbackError(r.err)
		}
		return r.code, nil
	case <-timer.C:
		if n := ignored.Load(); n > 0 {
			return "", fmt.Errorf("waiting for the redirect: no callback with this login's state within %s (--timeout); %d with another state or none were ignored (a stale tab, a forged request, or a server that drops the state); no token was stored", timeout, n)
		}
		return "", fmt.Errorf("waiting for the redirect: no callback within %s (--timeout); no token was stored", timeout)
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for the redirect: %w", ctx.Err())
	}
}

// callbackHandler answers a callback and hands its code (or refusal) to
// results; one with another login's state, or none, is only counted.
func callbackHandler(req jsonapi.AuthorizationRequest, results chan<- callbackResult, ignored *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
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
		return fmt.Errorf("following the authorize URL: it answered %s without redirecting: %s", resp.Status, strings.Join(strings.Fields(string(body)), " "))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil
}

// ReadPastedCode reads one line: the address the browser was sent to
// (whose state is checked) or a bare code.
func ReadPastedCode(ctx context.Context, stdin io.Reader, req jsonapi.AuthorizationRequest) (string, error) {
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

// OpenBrowser opens u in a browser without putting u on a command line,
// where other local users would read it (ps, /proc) and could use its
// state to race their own authorization in: it writes a page that
// redirects to u into a file only this user can read (0600, in a 0700
// folder) and gives the opener the file's path. The opener is $BROWSER,
// else open (macOS), else xdg-open when a display is set. It never fails:
// the URL is printed anyway. cleanup removes the file; call it once the
// login is over.
func OpenBrowser(ctx context.Context, getenv func(string) string, logger *slog.Logger, u string) (opened bool, cleanup func()) {
	cleanup = func() {}
	opener, _, _ := strings.Cut(strings.TrimSpace(getenv("BROWSER")), ":") // a list, by convention: its first
	switch {
	case opener != "":
	case runtime.GOOS == "darwin":
		opener = "open"
	case runtime.GOOS == "linux" && (getenv("DISPLAY") != "" || getenv("WAYLAND_DISPLAY") != ""):
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
		logger.DebugContext(ctx, "could not write the page that opens the browser", "err", err.Error())
		return false, cleanup
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	page := filepath.Join(dir, "login.html")
	target := html.EscapeString(u)
	body := `<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">` +
		`<meta http-equiv="refresh" content="0;url=` + target + `"><title>usersync auth login</title>` +
		`<p><a href="` + target + `">Continue to the authorization page</a></p>` + "\n"
	if err := os.WriteFile(page, []byte(body), 0o600); err != nil {
		logger.DebugContext(ctx, "could not write the page that opens the browser", "err", err.Error())
		return false, cleanup
	}
	cmd := exec.CommandContext(context.WithoutCancel(ctx), path, page) //nolint:gosec // G204: the opener is the user's own ($BROWSER) or a fixed name; the argument a file path
	if err := cmd.Start(); err != nil {
		logger.DebugContext(ctx, "could not open a browser", "opener", opener, "err", err.Error())
		return false, cleanup
	}
	go func() { _ = cmd.Wait() }()
	return true, cleanup
}

// RedactQuery drops a URL's query and userinfo, for messages.
func RedactQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
