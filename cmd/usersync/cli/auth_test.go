package cli

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer/syncertest"
)

// authEnv is a CLI environment whose simulator has OAuth on with a client id
// and secret only, in front of which tamper may sit.
type authEnv struct {
	*cliEnv
	tamper *tamperer
	oauth  map[string]string // the environment with OAuth and no refresh token
}

// tamperer passes requests to the simulator; edit, when set, may change the
// authorize endpoint's redirect before the browser (here, the command's
// --follow-redirect fetch) sees it. It records the codes and states issued.
type tamperer struct {
	sim  http.Handler
	mu   sync.Mutex
	edit func(loc *url.URL)
	seen []string // codes and states issued
}

func (tp *tamperer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/oauth/authorize" {
		tp.sim.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	tp.sim.ServeHTTP(rec, r)
	loc, err := url.Parse(rec.Header().Get("Location"))
	if err == nil && rec.Code == http.StatusFound {
		tp.mu.Lock()
		for _, k := range []string{"code", "state"} {
			if v := loc.Query().Get(k); v != "" {
				tp.seen = append(tp.seen, v)
			}
		}
		edit := tp.edit
		tp.mu.Unlock()
		if edit != nil {
			edit(loc)
		}
		rec.Header().Set("Location", loc.String())
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func (tp *tamperer) setEdit(edit func(*url.URL)) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.edit = edit
}

func (tp *tamperer) issued() []string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]string(nil), tp.seen...)
}

func newAuthEnv(t *testing.T, opts apisim.Options, extra map[string]string) *authEnv {
	t.Helper()
	opts.ClientID, opts.ClientSecret = "cid", "auth-test-secret"
	c := newCLIEnv(t, opts)
	tp := &tamperer{sim: c.sim}
	c.srv.Config.Handler = tp
	oauth := map[string]string{"USERSYNC_API_TOKEN": "", "USERSYNC_OAUTH_TOKEN_URL": c.srv.URL + "/oauth/token",
		"USERSYNC_OAUTH_CLIENT_ID": "cid", "USERSYNC_OAUTH_CLIENT_SECRET": "auth-test-secret"}
	for k, v := range c.env {
		if _, set := oauth[k]; !set {
			oauth[k] = v
		}
	}
	for k, v := range extra {
		oauth[k] = v
	}
	return &authEnv{cliEnv: c, tamper: tp, oauth: oauth}
}

func (a *authEnv) login(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return run(t, a.oauth, append([]string{"auth", "login", "--follow-redirect", "--redirect-port", "0"}, args...)...)
}

// oneErrorLine checks errs is exactly one line holding want.
func oneErrorLine(t *testing.T, what, errs, want string) {
	t.Helper()
	if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, want) {
		t.Errorf("%s: stderr is not one line holding %q:\n%s", what, want, errs)
	}
}

// TestAuthLoginThenSyncAndWorker: with OAuth configured and no refresh
// token anywhere, sync refuses naming auth login; auth login
// --follow-redirect stores a token; auth status shows it without the
// tokens; a sync and a worker then run on the stored token alone, and the
// worker's rotation keeps the store current.
func TestAuthLoginThenSyncAndWorker(t *testing.T) {
	t.Parallel()
	a := newAuthEnv(t, apisim.Options{Seed: 41, Users: 300, TokenTTL: time.Hour}, nil)

	code, _, errs := run(t, a.oauth, "sync")
	if code != ExitUsage {
		t.Errorf("sync with no token: exit %d, want %d", code, ExitUsage)
	}
	oneErrorLine(t, "sync with no token", errs, "run usersync auth login")
	if code, out, errs := run(t, a.oauth, "auth", "status"); code != ExitOK || !strings.Contains(out, "stored token   none") {
		t.Errorf("auth status before login: %d\n%s%s", code, out, errs)
	}

	code, out, errs := a.login(t)
	if code != ExitOK || !strings.Contains(out, "Authorized") || !strings.Contains(out, "usersync worker") {
		t.Fatalf("auth login: exit %d\n%s%s", code, out, errs)
	}
	stored := a.sim.RefreshToken()
	if n := a.query(t, `SELECT count(*) FROM $schema.oauth_tokens WHERE refresh_token = $1 AND access_token IS NOT NULL AND expires_at > now() + interval '50 minutes'`, stored); n != 1 {
		t.Fatalf("oauth_tokens holds %d rows with the simulator's refresh token, an access token and its expiry", n)
	}

	code, out, errs = run(t, a.oauth, "auth", "status")
	for _, want := range []string{"client         cid at " + a.srv.URL + "/oauth/token", "stored token   yes", "access token   expires 20", "(in ", "refresh token  last rotated 20", "s ago)", "fallback       USERSYNC_OAUTH_REFRESH_TOKEN not set"} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("auth status lacks %q: exit %d\n%s%s", want, code, out, errs)
		}
	}
	code, jsonOut, _ := run(t, a.oauth, "auth", "status", "--json")
	var st struct {
		Stored    bool       `json:"stored"`
		ExpiresAt *time.Time `json:"access_token_expires_at"`
		RotatedAt *time.Time `json:"refresh_token_rotated_at"`
	}
	if code != ExitOK || json.Unmarshal([]byte(jsonOut), &st) != nil || !st.Stored || st.ExpiresAt == nil || st.RotatedAt == nil {
		t.Errorf("auth status --json: %d %s", code, jsonOut)
	}
	for _, secret := range []string{stored, accessToken(t, a.cliEnv), "auth-test-secret"} {
		if strings.Contains(out+jsonOut, secret) {
			t.Errorf("auth status prints a secret:\n%s%s", out, jsonOut)
		}
	}

	// A sync on the stored token alone: no refresh token in the environment.
	if code, _, errs := run(t, a.oauth, "sync", "--full"); code != ExitOK {
		t.Fatalf("sync after login: exit %d: %s", code, errs)
	}
	syncertest.AssertMirrors(t, a.sim, a.store)

	// A worker too, through a refresh and a rotation.
	a.sim.ExpireTokens()
	a.sim.UpdateUsers(4)
	w := startWorker(t, workerEnv(a.cliEnv, mergeEnv(a.oauth, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 1s"})))
	waitFor(t, "a worker sync on the stored token", 30*time.Second, func() bool {
		return a.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded' AND job_id IS NOT NULL`) >= 1
	})
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code) // the logs follow: startWorker prints them when the test fails
	}
	if a.sim.RefreshToken() == stored || a.query(t, `SELECT count(*) FROM $schema.oauth_tokens WHERE refresh_token = $1`, a.sim.RefreshToken()) != 1 {
		t.Error("the worker's rotated refresh token is not the stored one")
	}
}

func mergeEnv(base, extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func accessToken(t *testing.T, c *cliEnv) string {
	t.Helper()
	var tok string
	if err := c.store.Pool().QueryRow(context.Background(), `SELECT coalesce(access_token, '') FROM "`+c.store.Schema()+`".oauth_tokens`).Scan(&tok); err != nil {
		t.Fatal(err)
	}
	if tok == "" {
		t.Fatal("no access token stored")
	}
	return tok
}

// TestAuthLoginRefusals: each way a login fails gives one line and stores
// nothing: consent denied, a callback whose state is not this login's, a
// code someone else already tried to redeem, a port in use, and
// --follow-redirect against endpoints that are not loopback.
func TestAuthLoginRefusals(t *testing.T) {
	t.Parallel()
	a := newAuthEnv(t, apisim.Options{Seed: 42, Users: 50}, nil)
	stored := func() int64 { return a.query(t, `SELECT count(*) FROM $schema.oauth_tokens`) }

	if err := a.sim.UpdateKnobs(func(k *apisim.Knobs) { k.DenyConsent = true }); err != nil {
		t.Fatal(err)
	}
	code, _, errs := a.login(t)
	if code != ExitFailure {
		t.Errorf("denied consent: exit %d", code)
	}
	oneErrorLine(t, "denied consent", errs, "authorization denied: consent was refused at the authorize page (access_denied)")
	if err := a.sim.UpdateKnobs(func(k *apisim.Knobs) { k.DenyConsent = false }); err != nil {
		t.Fatal(err)
	}

	a.tamper.setEdit(func(loc *url.URL) {
		q := loc.Query()
		q.Set("state", "forged-state")
		loc.RawQuery = q.Encode()
	})
	// A callback with another state is ignored: the login waits
	// for its own until the timeout.
	code, _, errs = a.login(t, "--timeout", "2s")
	if code != ExitFailure {
		t.Errorf("wrong state: exit %d", code)
	}
	oneErrorLine(t, "wrong state", errs, "no callback with this login's state within 2s (--timeout); 1 with another state or none were ignored")

	// Someone redeems the code first (without the PKCE verifier, so in vain,
	// but a code is single-use all the same).
	a.tamper.setEdit(func(loc *url.URL) {
		form := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
			"redirect_uri": {loc.Scheme + "://" + loc.Host + loc.Path}, "client_id": {"cid"}, "client_secret": {"auth-test-secret"}}
		req := httptest.NewRequest(http.MethodPost, "/oauth/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		a.sim.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("redeeming the code without the verifier: %d %s", rec.Code, rec.Body)
		}
	})
	code, _, errs = a.login(t)
	if code != ExitFailure {
		t.Errorf("code used: exit %d", code)
	}
	oneErrorLine(t, "code used", errs, "the token endpoint refused it (invalid_grant): it was already used")
	a.tamper.setEdit(nil)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	code, _, errs = a.login(t, "--redirect-port", port)
	if code != ExitFailure {
		t.Errorf("port in use: exit %d", code)
	}
	oneErrorLine(t, "port in use", errs, "listening for the redirect on 127.0.0.1:"+port+": the port is in use")

	for name, env := range map[string]map[string]string{
		"token URL":     {"USERSYNC_OAUTH_TOKEN_URL": "https://api.example.com/oauth/token"},
		"authorize URL": {"USERSYNC_OAUTH_AUTHORIZE_URL": "https://api.example.com/oauth/authorize"},
	} {
		code, _, errs := run(t, mergeEnv(a.oauth, env), "auth", "login", "--follow-redirect")
		if code != ExitUsage {
			t.Errorf("--follow-redirect, %s not loopback: exit %d", name, code)
		}
		oneErrorLine(t, "--follow-redirect, "+name+" not loopback", errs, "--follow-redirect is for demos and tests")
	}
	if n := stored(); n != 0 {
		t.Errorf("failed logins stored %d tokens", n)
	}
	if a.sim.TokenGrants() != 0 {
		t.Errorf("failed logins got %d grants", a.sim.TokenGrants())
	}
	// And a login after all that works.
	if code, out, errs := a.login(t); code != ExitOK || stored() != 1 {
		t.Errorf("login after the refusals: exit %d\n%s%s", code, out, errs)
	}
}

// TestAuthLoginNoBrowser: --no-browser prints the authorize URL and reads
// the address the browser was sent to; its state is checked.
func TestAuthLoginNoBrowser(t *testing.T) {
	t.Parallel()
	a := newAuthEnv(t, apisim.Options{Seed: 43, Users: 50}, nil)
	for _, tc := range []struct {
		name  string
		paste func(loc *url.URL) string
		code  int
		want  string
	}{
		{"forged state", func(loc *url.URL) string {
			q := loc.Query()
			q.Set("state", "other")
			loc.RawQuery = q.Encode()
			return loc.String()
		}, ExitFailure, "state does not match"},
		{"whole address", func(loc *url.URL) string { return loc.String() }, ExitOK, "Authorized"},
	} {
		stdin, paste := io.Pipe()
		out := &syncBuffer{}
		var errb strings.Builder
		done := make(chan int, 1)
		go func() {
			done <- MainWithInput(context.Background(), []string{"auth", "login", "--no-browser", "--redirect-port", "8976"},
				environ(a.oauth), stdin, out, &errb)
		}()
		var authorize string
		waitFor(t, "the authorize URL", 10*time.Second, func() bool {
			for _, f := range strings.Fields(out.String()) {
				if strings.HasPrefix(f, a.srv.URL+"/oauth/authorize?") {
					authorize = f
				}
			}
			return authorize != ""
		})
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Get(authorize)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || !strings.HasPrefix(loc.String(), "http://127.0.0.1:8976/callback?") {
			t.Fatalf("redirect %q %v", resp.Header.Get("Location"), err)
		}
		if _, err := io.WriteString(paste, tc.paste(loc)+"\n"); err != nil {
			t.Fatal(err)
		}
		code := <-done
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("%s: exit %d\n%s%s", tc.name, code, out, errb.String())
		}
	}
}

// TestAuthSubcommands: auth alone names its subcommands (exit 2), auth -h
// lists them, and help auth login is auth login -h.
func TestAuthSubcommands(t *testing.T) {
	t.Parallel()
	if code, _, errs := run(t, nil, "auth"); code != ExitUsage || !strings.Contains(errs, "usersync auth login or usersync auth status") {
		t.Errorf("auth: %d %s", code, errs)
	}
	if code, out, _ := run(t, nil, "auth", "-h"); code != ExitOK || !strings.Contains(out, "auth login") || !strings.Contains(out, "auth status") {
		t.Errorf("auth -h: %d %s", code, out)
	}
	_, direct, _ := run(t, nil, "auth", "login", "-h")
	code, viaHelp, _ := run(t, nil, "help", "auth", "login")
	if code != ExitOK || viaHelp != direct || !strings.Contains(direct, "--follow-redirect") || !strings.Contains(direct, "USERSYNC_OAUTH_AUTHORIZE_URL") {
		t.Errorf("help auth login: %d\n%s", code, viaHelp)
	}
	if code, _, errs := run(t, map[string]string{"USERSYNC_OAUTH_TOKEN_URL": "https://a.example.com/oauth/token"}, "auth", "status"); code != ExitUsage || !strings.Contains(errs, "USERSYNC_OAUTH_CLIENT_ID") {
		t.Errorf("auth status without a client id: %d %s", code, errs)
	}
	if code, _, errs := run(t, map[string]string{"USERSYNC_OAUTH_TOKEN_URL": "http://127.0.0.1:1/oauth/token", "USERSYNC_OAUTH_CLIENT_ID": "c",
		"USERSYNC_OAUTH_CLIENT_SECRET": "s"}, "auth", "login", "--no-browser", "--redirect-port", "0"); code != ExitUsage || !strings.Contains(errs, "fixed --redirect-port") {
		t.Errorf("--no-browser with port 0: %d %s", code, errs)
	}
}

// TestAuthLoginIgnoresForgedCallbacks: callbacks without this login's
// state (a forged code, a forged refusal, none at all), which any web page
// can send to the loopback listener, are ignored and the login goes on to
// succeed with the real one; the browser opener is never given the
// authorize URL (ps shows command lines to every local user) but a file
// that only this user can read, removed after the login.
func TestAuthLoginIgnoresForgedCallbacks(t *testing.T) {
	t.Parallel()
	a := newAuthEnv(t, apisim.Options{Seed: 44, Users: 50}, nil)
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "opener-args")
	opener := filepath.Join(dir, "browser")
	if err := os.WriteFile(opener, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+argsFile+".tmp && mv "+argsFile+".tmp "+argsFile+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(freeAddr(t))
	type result struct {
		code      int
		out, errs string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := run(t, mergeEnv(a.oauth, map[string]string{"BROWSER": opener}), "auth", "login", "--redirect-port", port, "--timeout", "60s")
		done <- result{code, out, errs}
	}()
	var args []string
	waitFor(t, "the browser opener", 30*time.Second, func() bool {
		b, err := os.ReadFile(argsFile)
		args = strings.Fields(string(b))
		return err == nil
	})
	if len(args) != 1 {
		t.Fatalf("the opener was given %q, want one file path", args)
	}
	page := args[0]
	if strings.Contains(page, "state") || strings.Contains(page, "authorize") || strings.Contains(page, "://") {
		t.Errorf("the opener's command line shows the authorize URL: %q", page)
	}
	fi, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	di, err := os.Stat(filepath.Dir(page))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("the page is %v in a folder %v, want 0600 in 0700", fi.Mode().Perm(), di.Mode().Perm())
	}
	body, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`href="([^"]+)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("the page links nowhere: %s", body)
	}
	authorizeURL := html.UnescapeString(string(m[1]))
	au, err := url.Parse(authorizeURL)
	if err != nil || au.Query().Get("state") == "" || au.Query().Get("code_challenge") == "" {
		t.Fatalf("the page does not lead to the authorize URL: %q", authorizeURL)
	}

	// Forged callbacks first: each is answered 400 and the login goes on.
	callback := "http://127.0.0.1:" + port + "/callback?"
	for _, forged := range []url.Values{
		{"code": {"forged-code"}, "state": {"forged-state"}},
		{"code": {"forged-code"}},
		{"error": {"access_denied"}},
		{"error": {"access_denied"}, "state": {"forged-state"}},
	} {
		resp, err := http.Get(callback + forged.Encode())
		if err != nil {
			t.Fatalf("forged callback %v: %v", forged, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("forged callback %v: %d", forged, resp.StatusCode)
		}
	}
	select {
	case r := <-done:
		t.Fatalf("a forged callback ended the login: exit %d\n%s%s", r.code, r.out, r.errs)
	case <-time.After(300 * time.Millisecond):
	}
	// The real one: the browser follows the page to the authorize URL, which
	// redirects it to the listener with the code and this login's state.
	resp, err := http.Get(authorizeURL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the real callback: %d", resp.StatusCode)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the login did not finish after the real callback")
	}
	if r.code != ExitOK || a.query(t, `SELECT count(*) FROM $schema.oauth_tokens`) != 1 {
		t.Errorf("login: exit %d\n%s%s", r.code, r.out, r.errs)
	}
	if _, err := os.Stat(page); !os.IsNotExist(err) {
		t.Errorf("the page is left behind: %v", err)
	}
}

// TestAuthLoginSurvivesForgedCallbacks: forged callbacks that reach the
// listener before the real redirect (a forged code, a forged refusal,
// another state) are ignored, and the real one completes the login.
func TestAuthLoginSurvivesForgedCallbacks(t *testing.T) {
	t.Parallel()
	a := newAuthEnv(t, apisim.Options{Seed: 45, Users: 50}, nil)
	var forgedCodes []int
	a.tamper.setEdit(func(loc *url.URL) {
		for _, forged := range []url.Values{
			{"code": {"forged-code"}, "state": {"forged-state"}},
			{"code": {"forged-code"}},
			{"error": {"access_denied"}},
		} {
			resp, err := http.Get(loc.Scheme + "://" + loc.Host + loc.Path + "?" + forged.Encode())
			if err != nil {
				t.Errorf("forged callback: %v", err)
				continue
			}
			_ = resp.Body.Close()
			forgedCodes = append(forgedCodes, resp.StatusCode)
		}
	})
	code, out, errs := a.login(t, "--timeout", "30s")
	if code != ExitOK || a.query(t, `SELECT count(*) FROM $schema.oauth_tokens`) != 1 {
		t.Errorf("login after forged callbacks: exit %d\n%s%s", code, out, errs)
	}
	if len(forgedCodes) != 3 || slices.ContainsFunc(forgedCodes, func(c int) bool { return c != http.StatusBadRequest }) {
		t.Errorf("forged callbacks were answered %v, want 400 each", forgedCodes)
	}
}
