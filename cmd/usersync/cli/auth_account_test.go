package cli

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
)

// TestAccountRemediesNameIt: a registered account's credential errors say
// the command that fixes that account (usersync auth login --account NAME),
// not the default account's: a sync or reconcile without a stored token,
// and auth status before the login.
func TestAccountRemediesNameIt(t *testing.T) {
	t.Parallel()
	f := newOAuthAccountFleet(t)
	for _, args := range [][]string{{"sync", "--account", "oa"}, {"reconcile", "--account", "oa"}} {
		code, _, errs := run(t, f.env, args...)
		if code != ExitUsage {
			t.Errorf("usersync %s without a stored token: exit %d, want %d", strings.Join(args, " "), code, ExitUsage)
		}
		oneErrorLine(t, strings.Join(args, " "), errs, "no OAuth refresh token")
		if !strings.Contains(errs, "run usersync auth login --account oa") {
			t.Errorf("usersync %s does not name the account's login:\n%s", strings.Join(args, " "), errs)
		}
	}
	if out := f.mustRun(t, "auth", "status", "--account", "oa"); !strings.Contains(out, "run usersync auth login --account oa") {
		t.Errorf("auth status --account oa before the login:\n%s", out)
	}
}

// newOAuthAccountFleet is a fleet of the default account (a static token)
// and two registered accounts: oa, with OAuth and no token stored yet, and
// eu, with a static token.
func newOAuthAccountFleet(t *testing.T) *registryFleet {
	t.Helper()
	f := newRegistryFleet(t)
	sim := apisim.New(apisim.Options{Seed: 13, Users: 30, ClientID: "oa-cid", ClientSecret: "oa-client-secret-0123456789"})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	f.mustRun(t, "accounts", "add", "oa", "--api-url", srv.URL, "--schema", schematest.NewSchemaName(t, f.pool),
		"--oauth-token-url", srv.URL+"/oauth/token", "--oauth-client-id", "oa-cid",
		"--oauth-client-secret-file", f.secretFile(t, "cs", "oa-client-secret-0123456789"))
	_, euURL := f.simulator(t, 5, 20)
	f.mustRun(t, "accounts", "add", "eu", "--api-url", euURL, "--schema", schematest.NewSchemaName(t, f.pool),
		"--api-token-file", f.secretFile(t, "eu.token", "eu-token-0123456789"))
	return f
}
