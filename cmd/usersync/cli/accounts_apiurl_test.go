package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
)

// credentialURLs are API URLs that carry a secret beside the host.
var credentialURLs = map[string]string{
	"token":        "?token=url-secret-abc",
	"access_token": "?access_token=url-secret-abc",
	"fragment":     "#url-secret-abc",
	"userinfo":     "user:url-secret-abc@",
}

// withCredential puts the secret of kind into base ("http://127.0.0.1:port").
func withCredential(base, kind string) string {
	if kind == "userinfo" {
		return strings.Replace(base, "://", "://"+credentialURLs[kind], 1)
	}
	return base + credentialURLs[kind]
}

// TestAPIURLWithCredentialsIsRefused: an API URL with a query string, a
// fragment or userinfo is refused, in one line naming the setting and
// pointing to USERSYNC_API_TOKEN_FILE, for the default account's
// environment and for accounts add and set; a row stored that way before is
// printed by accounts list and show with its secret REDACTED.
func TestAPIURLWithCredentialsIsRefused(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	_, url := f.simulator(t, 4, 10)
	tok := f.secretFile(t, "tok", "apiurl-secret-0123456789")
	f.mustRun(t, "accounts", "add", "eu", "--api-url", url, "--schema", schematest.NewSchemaName(t, f.pool), "--api-token-file", tok)
	apSchema := schematest.NewSchemaName(t, f.pool)
	refused := func(what string, code int, out, errs string) {
		t.Helper()
		if code != ExitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "USERSYNC_API_TOKEN_FILE") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line pointing to USERSYNC_API_TOKEN_FILE", what, code, errs)
		}
		if strings.Contains(out+errs, "url-secret") {
			t.Errorf("%s: the secret shows: %q", what, out+errs)
		}
	}
	for kind := range credentialURLs {
		bad := withCredential(url, kind)
		env := map[string]string{}
		for k, v := range f.env {
			env[k] = v
		}
		env["USERSYNC_API_URL"] = bad
		for _, cmd := range []string{"accounts list", "status", "sync"} {
			code, out, errs := run(t, env, strings.Fields(cmd)...)
			refused(kind+": USERSYNC_API_URL, "+cmd, code, out, errs)
			if !strings.Contains(errs, "USERSYNC_API_URL") {
				t.Errorf("%s: %s does not name USERSYNC_API_URL: %q", kind, cmd, errs)
			}
		}
		before := f.state(t, apSchema)
		code, out, errs := run(t, f.env, "accounts", "add", "ap", "--api-url", bad, "--schema", apSchema, "--api-token-file", tok)
		refused(kind+": accounts add", code, out, errs)
		code, out, errs = run(t, f.env, "accounts", "set", "eu", "--api-url", bad)
		refused(kind+": accounts set", code, out, errs)
		if !strings.Contains(errs, "--api-url") {
			t.Errorf("%s: accounts set does not name --api-url: %q", kind, errs)
		}
		if f.state(t, apSchema) != before {
			t.Errorf("%s: a refused command changed the registry", kind)
		}
	}
	for kind := range credentialURLs {
		if _, err := f.pool.Exec(context.Background(), `UPDATE "`+f.env["USERSYNC_SCHEMA"]+`_river".accounts
			SET settings = settings || jsonb_build_object('USERSYNC_API_URL', $1::text) WHERE name = 'eu'`, withCredential(url, kind)); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"accounts list", "accounts list --json", "accounts show eu", "accounts show eu --json", "status"} {
			out := f.mustRun(t, strings.Fields(cmd)...)
			if strings.Contains(out, "url-secret") {
				t.Errorf("%s: %s shows the stored URL's secret:\n%s", kind, cmd, out)
			}
			if strings.HasPrefix(cmd, "accounts") && !strings.Contains(out, "REDACTED") {
				t.Errorf("%s: %s does not say the URL was redacted:\n%s", kind, cmd, out)
			}
		}
	}
}
