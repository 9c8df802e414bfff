package cli

import (
	"bytes"
	"context"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
)

// TestAccountsBadInput: each refused command exits 2 with one line on
// stderr that holds no secret, and changes neither the registry nor the
// schemas.
func TestAccountsBadInput(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	_, url := f.simulator(t, 7, 20)
	const secret = "bad-input-secret-0123456789"
	tok := f.secretFile(t, "tok", secret)
	taken := schematest.NewSchemaName(t, f.pool)
	f.mustRun(t, "accounts", "add", "eu", "--api-url", url, "--schema", taken, "--api-token-file", tok)
	other := schematest.NewSchemaName(t, f.pool) // another deployment's
	otherEnv := map[string]string{"DATABASE_URL": f.env["DATABASE_URL"], "USERSYNC_SCHEMA": other, "USERSYNC_READER_ROLE": ""}
	if code, _, errs := run(t, otherEnv, "migrate"); code != ExitOK {
		t.Fatal(errs)
	}
	fresh := schematest.NewSchemaName(t, f.pool)
	add := func(name string, extra ...string) []string {
		return append([]string{"accounts", "add", name, "--api-url", url, "--api-token-file", tok}, extra...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{add("EU", "--schema", fresh), "not a lower-case identifier"},
		{add("1eu", "--schema", fresh), "not a lower-case identifier"},
		{add("default", "--schema", fresh), "USERSYNC_* environment"},
		{add("eu", "--schema", fresh), "registered already"},
		{add("us", "--schema", taken), "account eu's"},
		{add("us", "--schema", f.env["USERSYNC_SCHEMA"]), "default account's"},
		{add("us", "--schema", f.env["USERSYNC_SCHEMA"]+"_river"), "_river"},
		{add("us", "--schema", f.env["USERSYNC_SCHEMA"]+"_all"), "union views"},
		{add("us", "--schema", other), "another deployment's usersync tables"},
		{add("us", "--schema", "public"), "public"},
		{add("us", "--schema", fresh, "--page-size", "0"), "--page-size must be"},
		{add("us", "--schema", fresh, "--sync-schedule", "often"), "--sync-schedule"},
		{add("us", "--schema", fresh, "--pii-hash", "email", "--pii-key-file", f.secretFile(t, "key", secret)), "--pii-key-file"},
		{[]string{"accounts", "add", "us", "--schema", fresh, "--api-token-file", tok}, "--api-url is required"},
		{[]string{"accounts", "add", "us", "--api-url", url, "--schema", fresh, "--oauth-token-url", url + "/oauth/token"}, "USERSYNC_OAUTH_CLIENT_ID is not set"},
		{add("us", "--schema", fresh, "--oauth-token-url", url+"/oauth/token"), "USERSYNC_API_TOKEN and USERSYNC_OAUTH_* are both set"},
		{[]string{"accounts", "add", "us", "--api-url", url, "--api-token", secret}, "flag provided but not defined"},
		{[]string{"accounts", "show", "nope"}, "no account nope"},
		{[]string{"accounts", "pause", "nope"}, "no account nope"},
		{[]string{"accounts", "resume", "nope"}, "no account nope"},
		{[]string{"accounts", "remove", "nope"}, "no account nope"},
		{[]string{"accounts", "remove", "eu", "--drop-data"}, "give --yes"},
		{[]string{"status", "--account", "nope"}, "no such account"},
		{[]string{"sync", "--account", "nope"}, "no such account"},
		{[]string{"check", "--account", "nope"}, "no such account"},
		{[]string{"jobs", "list", "--account", "nope"}, "no such account"},
		{[]string{"auth", "status", "--account", "nope"}, "no such account"},
		{[]string{"schema", "--format", "dbt", "--account", "No"}, "not a lower-case identifier"},
	} {
		before := f.state(t, taken, other, other+"_river", fresh)
		var out, errb bytes.Buffer
		code := MainWithInput(context.Background(), tc.args, environ(f.env), strings.NewReader("eu\n"), &out, &errb)
		errs := errb.String()
		if code != ExitUsage || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 || strings.Contains(errs+out.String(), secret) {
			t.Errorf("usersync %s: exit %d, stderr %q; want exit 2 and one line saying %q, without the secret", strings.Join(tc.args, " "), code, errs, tc.want)
		}
		if after := f.state(t, taken, other, other+"_river", fresh); after != before {
			t.Errorf("usersync %s changed the registry or the schemas:\n%s\n->\n%s", strings.Join(tc.args, " "), before, after)
		}
	}
}

// TestAccountsDropData: remove --drop-data --yes drops the account's schema
// and its snapshots, and only its own.
func TestAccountsDropData(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	_, url := f.simulator(t, 9, 30)
	usSchema := schematest.NewSchemaName(t, f.pool)
	f.mustRun(t, "accounts", "add", "us", "--api-url", url, "--schema", usSchema, "--api-token-file", f.secretFile(t, "us.token", "cli-test-token"))
	f.mustRun(t, "sync", "--account", "us", "--full")
	f.mustRun(t, "snapshot", "--account", "us")
	f.mustRun(t, "sync", "--full")
	f.mustRun(t, "snapshot")
	snaps := filepath.Join(f.env["USERSYNC_SNAPSHOT_DIR"], usSchema)
	if _, err := os.Stat(snaps); err != nil {
		t.Fatalf("no snapshot of us: %v", err)
	}
	out := f.mustRun(t, "accounts", "remove", "us", "--drop-data", "--yes")
	if !strings.Contains(out, "schema "+usSchema+" dropped") {
		t.Errorf("remove --drop-data: %s", out)
	}
	if n := f.count(t, `SELECT count(*) FROM pg_namespace WHERE nspname = '`+usSchema+`'`); n != 0 {
		t.Error("the account's schema is still there")
	}
	if _, err := os.Stat(snaps); !os.IsNotExist(err) {
		t.Errorf("the account's snapshots are still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.env["USERSYNC_SNAPSHOT_DIR"], f.env["USERSYNC_SCHEMA"])); err != nil {
		t.Errorf("the default account's snapshots went too: %v", err)
	}
	if n := f.count(t, `SELECT count(*) FROM "`+f.env["USERSYNC_SCHEMA"]+`".users`); n != 120 {
		t.Errorf("the default account's users: %d, want 120", n)
	}
}

// TestAccountsSetRotatesToken: an account whose token the API refuses says
// to store a valid one for that account (not the default account's remedy);
// accounts set stores it, and the next sync works; its schema never changes.
func TestAccountsSetRotatesToken(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	sim := apisim.New(apisim.Options{Seed: 11, Users: 40, Token: "the-right-token-0123456789"})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	apSchema := schematest.NewSchemaName(t, f.pool)
	f.mustRun(t, "accounts", "add", "ap", "--api-url", srv.URL, "--schema", apSchema,
		"--api-token-file", f.secretFile(t, "wrong", "a-wrong-token-0123456789"))
	code, _, errs := run(t, f.env, "sync", "--account", "ap")
	if code != ExitFailure || !strings.Contains(errs, "usersync accounts set ap --api-token-file") || strings.Contains(errs, "restart the worker") {
		t.Fatalf("sync with a refused token: exit %d: %s", code, errs)
	}
	before := f.state(t, apSchema)
	if code, _, errs := run(t, f.env, "accounts", "set", "ap", "--schema", "elsewhere"); code != ExitUsage || !strings.Contains(errs, "never changes") {
		t.Errorf("accounts set --schema: exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, f.env, "accounts", "set", "ap", "--page-size", "0"); code != ExitUsage || !strings.Contains(errs, "--page-size must be") {
		t.Errorf("accounts set --page-size 0: exit %d: %s", code, errs)
	}
	if after := f.state(t, apSchema); after != before {
		t.Errorf("refused accounts set changed the registry:\n%s\n->\n%s", before, after)
	}
	f.mustRun(t, "accounts", "set", "ap", "--api-token-file", f.secretFile(t, "right", "the-right-token-0123456789"), "--page-size", "15")
	out := f.mustRun(t, "sync", "--account", "ap", "--full")
	if !strings.Contains(out, "40 received") {
		t.Errorf("sync after accounts set:\n%s", out)
	}
	if show := f.mustRun(t, "accounts", "show", "ap"); !strings.Contains(show, apSchema) || strings.Contains(show, "the-right-token") {
		t.Errorf("accounts show after set:\n%s", show)
	}
}

// TestAccountsOAuth: an OAuth account added from the default account's
// environment (a static token there) takes none of the default's
// credentials; auth status and auth login --account work on the account's
// own token store, and its sync runs on the token stored there.
func TestAccountsOAuth(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	sim := apisim.New(apisim.Options{Seed: 13, Users: 30, ClientID: "eu-cid", ClientSecret: "eu-client-secret-0123456789"})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	oaSchema := schematest.NewSchemaName(t, f.pool)
	out := f.mustRun(t, "accounts", "add", "oa", "--api-url", srv.URL, "--schema", oaSchema, "--oauth-token-url", srv.URL+"/oauth/token",
		"--oauth-client-id", "eu-cid", "--oauth-client-secret-file", f.secretFile(t, "cs", "eu-client-secret-0123456789"))
	if strings.Contains(out, "taken from the environment") {
		t.Errorf("the default account's static token was taken for an OAuth account:\n%s", out)
	}
	if out := f.mustRun(t, "accounts", "show", "oa"); !strings.Contains(out, "USERSYNC_API_TOKEN                 default  (empty)") {
		t.Errorf("accounts show oa:\n%s", out)
	}
	if out := f.mustRun(t, "auth", "status", "--account", "oa"); !strings.Contains(out, "stored token   none") || !strings.Contains(out, "eu-cid") {
		t.Errorf("auth status --account oa before login:\n%s", out)
	}
	if code, _, errs := run(t, f.env, "auth", "login", "--account", "oa", "--follow-redirect", "--redirect-port", "0"); code != ExitOK {
		t.Fatalf("auth login --account oa: exit %d: %s", code, errs)
	}
	if n := f.count(t, `SELECT count(*) FROM "`+oaSchema+`".oauth_tokens`); n != 1 {
		t.Errorf("the account's schema holds %d stored tokens, want 1", n)
	}
	if n := f.count(t, `SELECT count(*) FROM "`+f.env["USERSYNC_SCHEMA"]+`".oauth_tokens`); n != 0 {
		t.Errorf("the default account's schema holds %d stored tokens, want 0", n)
	}
	if out := f.mustRun(t, "sync", "--account", "oa", "--full"); !strings.Contains(out, "30 received") {
		t.Errorf("sync --account oa:\n%s", out)
	}
}

// TestAddDefaultsTheSchema: an account added without --schema gets
// <USERSYNC_SCHEMA>_NAME, and only the account-scoped flags given are stored.
func TestAddDefaultsTheSchema(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("accounts add", flag.ContinueOnError)
	files := secretFileFlags(fs)
	registerSettingFlags(fs)
	if err := fs.Parse([]string{"--api-url", "https://eu.api.example.com", "--page-size", "50", "--workers", "3"}); err != nil {
		t.Fatal(err)
	}
	e := env0{}.env()
	e.getenv = func(string) string { return "" }
	e.cfg.Schema = "usersync"
	vals, _, err := addValues(e, fs, files, "eu")
	if err != nil || vals["USERSYNC_SCHEMA"] != "usersync_eu" || vals["USERSYNC_PAGE_SIZE"] != "50" || len(vals) != 3 {
		t.Errorf("addValues = %v, %v; want usersync_eu, the API URL and the page size (not the fleet-wide workers)", vals, err)
	}
}
