package cli

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestUnreachableAPIIsOneLine: a sync against an API that
// never answers logs no retry at INFO and ends with one line that names the
// host in clear, what was tried and what to check, without the request's
// percent-encoded query.
func TestUnreachableAPIIsOneLine(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 5, Users: 10})
	addr := closedPort(t)
	code, _, errs := run(t, mergeEnv(c.env, map[string]string{"USERSYNC_API_URL": "http://" + addr}), "sync")
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitFailure, errs)
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{"usersync sync: ", "the API at " + addr + " did not answer", "5 attempts of GET /api/v2/", "connection refused",
		"check USERSYNC_API_URL and the network (DNS, proxy"} {
		if !strings.Contains(last, want) {
			t.Errorf("the error lacks %q:\n%s", want, last)
		}
	}
	if strings.Contains(last, "%5B") || strings.Contains(last, "?") || len(last) > 400 {
		t.Errorf("the error is long or percent-encoded (%d bytes):\n%s", len(last), last)
	}
	if strings.Contains(errs, "retrying") || len(lines) > 2 { // "run started", then the error
		t.Errorf("retries logged at INFO, or more than the run's start and the error:\n%s", errs)
	}
}

// TestRevokedGrantShownByAuthStatus: after the token endpoint
// refuses the stored grant (invalid_grant), auth status says so, when, and
// to run usersync auth login, instead of only the stored access token's
// expiry; a new login clears it.
func TestRevokedGrantShownByAuthStatus(t *testing.T) {
	t.Parallel()
	a := newAuthEnv(t, apisim.Options{Seed: 43, Users: 30, TokenTTL: 2 * time.Hour}, nil)
	if code, out, errs := a.login(t); code != ExitOK {
		t.Fatalf("auth login: exit %d\n%s%s", code, out, errs)
	}
	a.sim.RevokeTokens()
	if code, _, errs := run(t, a.oauth, "sync"); code != ExitFailure || !strings.Contains(errs, "run usersync auth login") {
		t.Fatalf("sync with a revoked grant: exit %d: %s", code, errs)
	}
	code, out, errs := run(t, a.oauth, "auth", "status")
	for _, want := range []string{"last refresh   FAILED 20", "s ago): refreshing OAuth token: authentication failed: 400 Bad Request: invalid_grant",
		"; run usersync auth login", "its grant was refused since"} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("auth status lacks %q: exit %d\n%s%s", want, code, out, errs)
		}
	}
	_, jsonOut, _ := run(t, a.oauth, "auth", "status", "--json")
	var st struct {
		Failure *struct {
			At   time.Time `json:"at"`
			Code string    `json:"code"`
		} `json:"last_refresh_failure"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &st); err != nil || st.Failure == nil || st.Failure.Code != "invalid_grant" || time.Since(st.Failure.At) > time.Minute {
		t.Errorf("auth status --json: %v\n%s", err, jsonOut)
	}
	if code, out, errs := a.login(t); code != ExitOK {
		t.Fatalf("auth login again: exit %d\n%s%s", code, out, errs)
	}
	if _, out, _ := run(t, a.oauth, "auth", "status"); strings.Contains(out, "FAILED") {
		t.Errorf("auth status after a new login still shows the failure:\n%s", out)
	}
}

// TestStatusShowsGrantedScopes: status and auth status show
// the scope the grant holds, never the API user's rights: a read-only login
// is read-only even when the user may write users; a write scope warns, at
// login too; a static token shows no scope, and the sync summary none.
func TestStatusShowsGrantedScopes(t *testing.T) {
	t.Parallel()
	a := newAuthEnv(t, apisim.Options{Seed: 44, Users: 30, TokenTTL: time.Hour}, nil)
	code, out, errs := a.login(t)
	if code != ExitOK {
		t.Fatalf("auth login: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "Scope granted: users.read teams.read roles.read profiles.read (read-only)") {
		t.Errorf("auth login does not say the grant is read-only:\n%s", out)
	}
	code, out, errs = run(t, a.oauth, "sync", "--full")
	if code != ExitOK || strings.Contains(out, "write") {
		t.Errorf("sync after a read-only login: exit %d; the summary speaks of write access:\n%s%s", code, out, errs)
	}
	_, out, _ = run(t, a.oauth, "status")
	if !strings.Contains(out, "api scope    users.read teams.read roles.read profiles.read (read-only)") || strings.Contains(out, "write") {
		t.Errorf("status after a read-only login:\n%s", out)
	}
	if _, out, _ := run(t, a.oauth, "auth", "status"); !strings.Contains(out, "scope          users.read teams.read roles.read profiles.read (read-only)") {
		t.Errorf("auth status after a read-only login:\n%s", out)
	}

	writer := mergeEnv(a.oauth, map[string]string{"USERSYNC_OAUTH_SCOPES": "users.read users.write teams.read"})
	const warning = "users.read users.write teams.read: WARNING users.write can change the API's data"
	if code, out, errs := run(t, writer, "auth", "login", "--follow-redirect", "--redirect-port", "0"); code != ExitOK || !strings.Contains(out, warning) {
		t.Errorf("auth login with a write scope: exit %d\n%s%s", code, out, errs)
	}
	for _, cmd := range [][]string{{"status"}, {"auth", "status"}} {
		if _, out, _ := run(t, writer, cmd...); !strings.Contains(out, warning) || !strings.Contains(out, "USERSYNC_OAUTH_SCOPES") {
			t.Errorf("%s after a login with a write scope:\n%s", cmd, out)
		}
	}
	_, jsonOut, _ := run(t, writer, "status", "--json")
	var st struct {
		Scope string `json:"oauth_scope"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &st); err != nil || st.Scope != "users.read users.write teams.read" {
		t.Errorf("status --json: oauth_scope %q (%v)", st.Scope, err)
	}

	// A static token: nothing says what it may do, so nothing is shown.
	c := newCLIEnv(t, apisim.Options{Seed: 45, Users: 20})
	if code, out, errs := run(t, c.env, "sync", "--full"); code != ExitOK || strings.Contains(out, "write") {
		t.Errorf("sync with a static token: exit %d\n%s%s", code, out, errs)
	}
	if _, out, _ := run(t, c.env, "status"); strings.Contains(out, "api scope") || strings.Contains(out, "write") {
		t.Errorf("status with a static token:\n%s", out)
	}
}
