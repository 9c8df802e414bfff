package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/secret"
)

// TestLegacyAccountRow: a row as an earlier release stored it (its token
// and its PII key in clear) keeps working; status and check name the
// account and the fix; accounts set --pii-key-file removes the stored key
// (refused when the file holds another) and accounts rekey seals the token.
func TestLegacyAccountRow(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	const token, piiKey = "lg-TOKEN-0123456789", "LEGACYPII-0123456789abcdefghijklmnopqrstuv"
	sim := apisim.New(apisim.Options{Seed: 25, Users: 25, Token: token})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	keyFile := f.secretFile(t, "lg.pii", piiKey)
	f.mustRun(t, "accounts", "add", "lg", "--api-url", srv.URL, "--schema", schematest.NewSchemaName(t, f.pool),
		"--api-token-file", f.secretFile(t, "lg.token", token), "--pii-hash", "email", "--pii-key-file", keyFile)
	f.mustRun(t, "sync", "--account", "lg", "--full")
	row := func() map[string]string {
		var s map[string]string
		if err := f.pool.QueryRow(context.Background(), `SELECT settings FROM "`+f.env["USERSYNC_SCHEMA"]+`_river".accounts WHERE name = 'lg'`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := row(); s[registry.PIIKeyFile] != keyFile || s["USERSYNC_PII_KEY"] != "" {
		t.Fatalf("stored: %v", s)
	}
	if _, err := f.pool.Exec(context.Background(), `UPDATE "`+f.env["USERSYNC_SCHEMA"]+`_river".accounts SET settings = (settings - 'USERSYNC_PII_KEY_FILE')
		|| jsonb_build_object('USERSYNC_API_TOKEN', $1::text, 'USERSYNC_PII_KEY', $2::text) WHERE name = 'lg'`, token, piiKey); err != nil {
		t.Fatal(err)
	}
	sim.UpdateUsers(2)
	if out := f.mustRun(t, "sync", "--account", "lg"); !strings.Contains(out, "2 updated") {
		t.Errorf("sync of the legacy row:\n%s", out)
	}
	status := f.mustRun(t, "status")
	_, check, _ := run(t, f.env, "check")
	for _, want := range []string{"account lg: its PII key is stored in the database", "run usersync accounts set lg --pii-key-file PATH", "account lg: its secrets are stored in clear", "usersync accounts rekey"} {
		if !strings.Contains(status, want) || !strings.Contains(check, want) {
			t.Errorf("status or check does not say %q:\n%s\n%s", want, status, check)
		}
	}
	code, _, errs := run(t, f.env, "accounts", "set", "lg", "--pii-key-file", f.secretFile(t, "other.pii", "OTHERPII-0123456789abcdefghijklmnopqrstu"))
	wantOneLine(t, "set to another PII key", code, errs, "holds another key than the one stored")
	f.mustRun(t, "accounts", "set", "lg", "--pii-key-file", keyFile)
	if s := row(); s[registry.PIIKeyFile] != keyFile || s["USERSYNC_PII_KEY"] != "" || s["USERSYNC_API_TOKEN"] != token {
		t.Errorf("after accounts set --pii-key-file: %v", s)
	}
	if show := f.mustRun(t, "accounts", "show", "lg"); !strings.Contains(show, "file "+keyFile) || strings.Contains(show, piiKey) || strings.Contains(show, token) {
		t.Errorf("accounts show lg:\n%s", show)
	}
	if out := f.mustRun(t, "accounts", "rekey"); !strings.Contains(out, "account lg: 1 secret(s) sealed") {
		t.Errorf("accounts rekey:\n%s", out)
	}
	if s := row(); !secret.IsSealed(s["USERSYNC_API_TOKEN"]) {
		t.Errorf("after rekey: %v", s)
	}
	if status := f.mustRun(t, "status"); strings.Contains(status, "note:") {
		t.Errorf("status after the fixes:\n%s", status)
	}
	f.mustRun(t, "sync", "--account", "lg")
}

// pgTool finds a PostgreSQL client binary.
func pgTool(t *testing.T, name string) string {
	t.Helper()
	if p := filepath.Join("/usr/lib/postgresql/15/bin", name); fileExists(p) {
		return p
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed", name)
	}
	return p
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestDumpHoldsNoSecret restores a pg_dump of a fleet (the default account
// hashing emails, an account with a token and a PII key file, an OAuth
// account with its tokens stored) into a fresh database and finds no PII
// key and no secret in clear, raw or in hex, in either dump.
func TestDumpHoldsNoSecret(t *testing.T) {
	t.Parallel()
	pgDump, psql := pgTool(t, "pg_dump"), pgTool(t, "psql")
	f := newRegistryFleet(t)
	const defaultPII, euPII, euToken = "DEFAULTPII-0123456789abcdefghijklmnop", "EUPII-0123456789abcdefghijklmnopqrstuvw", "eu-TOKEN-0123456789"
	const clientSecret, refresh0 = "oa-CLIENTSECRET-0123456789", "oa-REFRESH-0123456789"
	f.env["USERSYNC_PII_HASH"], f.env["USERSYNC_PII_KEY"] = "email", defaultPII
	f.mustRun(t, "sync", "--full")
	euSim := apisim.New(apisim.Options{Seed: 27, Users: 20, Token: euToken})
	euSrv := httptest.NewServer(euSim)
	t.Cleanup(euSrv.Close)
	euSchema, oaSchema := schematest.NewSchemaName(t, f.pool), schematest.NewSchemaName(t, f.pool)
	f.mustRun(t, "accounts", "add", "eu", "--api-url", euSrv.URL, "--schema", euSchema, "--api-token-file", f.secretFile(t, "eu.token", euToken),
		"--pii-hash", "email", "--pii-key-file", f.secretFile(t, "eu.pii", euPII))
	f.mustRun(t, "sync", "--account", "eu", "--full")
	oaSim := apisim.New(apisim.Options{Seed: 29, Users: 20, RefreshToken: refresh0, ClientID: "oa-cid", ClientSecret: clientSecret})
	oaSrv := httptest.NewServer(oaSim)
	t.Cleanup(oaSrv.Close)
	f.mustRun(t, "accounts", "add", "oa", "--api-url", oaSrv.URL, "--schema", oaSchema, "--oauth-token-url", oaSrv.URL+"/oauth/token",
		"--oauth-client-id", "oa-cid", "--oauth-client-secret-file", f.secretFile(t, "oa.cs", clientSecret),
		"--oauth-refresh-token-file", f.secretFile(t, "oa.rt", refresh0))
	f.mustRun(t, "sync", "--account", "oa", "--full")
	secrets := []string{defaultPII, euPII, euToken, clientSecret, refresh0, oaSim.RefreshToken(), storedAccessToken(t, f, oaSchema), testSecretsKey}

	d := f.env["USERSYNC_SCHEMA"]
	dump1 := filepath.Join(t.TempDir(), "fleet.sql")
	runTool(t, pgDump, "--no-owner", "--no-privileges", "-d", f.env["DATABASE_URL"], "-f", dump1,
		"-n", d, "-n", d+"_river", "-n", d+"_all", "-n", euSchema, "-n", oaSchema)
	restored := restoreDatabase(t, f)
	runTool(t, psql, "-q", "-v", "ON_ERROR_STOP=1", "-d", restored, "-f", dump1)
	conn, err := pgx.Connect(context.Background(), restored)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var accountsN, euUsers int
	if err := conn.QueryRow(context.Background(), fmt.Sprintf(`SELECT (SELECT count(*) FROM %q.accounts), (SELECT count(*) FROM %q.users)`, d+"_river", euSchema)).Scan(&accountsN, &euUsers); err != nil || accountsN != 2 || euUsers != 20 {
		t.Fatalf("the restored database: %d accounts, %d users of eu, %v", accountsN, euUsers, err)
	}
	dump2 := filepath.Join(t.TempDir(), "restored.sql")
	runTool(t, pgDump, "--no-owner", "--no-privileges", "-d", restored, "-f", dump2)
	for _, p := range []string{dump1, dump2} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ToLower(string(b))
		if !strings.Contains(text, "usersync-sealed:v1:") || !strings.Contains(text, euSchema) || !strings.Contains(text, "usersync_pii_key_file") {
			t.Fatalf("%s holds no sealed value or no account: not a dump of the fleet", p)
		}
		for _, s := range secrets {
			for _, form := range []string{strings.ToLower(s), hex.EncodeToString([]byte(s))} {
				if i := strings.Index(text, form); i >= 0 {
					t.Errorf("%s holds a secret in clear: …%s…", filepath.Base(p), text[max(0, i-80):min(len(text), i+40)])
				}
			}
		}
	}
}

// storedAccessToken opens the access token stored in schema's oauth_tokens.
func storedAccessToken(t *testing.T, f *registryFleet, schemaName string) string {
	t.Helper()
	var tokenKey, sealed string
	if err := f.pool.QueryRow(context.Background(), `SELECT token_key, access_token FROM "`+schemaName+`".oauth_tokens`).Scan(&tokenKey, &sealed); err != nil {
		t.Fatal(err)
	}
	k, err := secret.ParseKey(testSecretsKey)
	if err != nil {
		t.Fatal(err)
	}
	access, err := k.Open(secret.Bind("oauth_tokens", schemaName, tokenKey, "access_token"), sealed)
	if err != nil || access == "" {
		t.Fatalf("the stored access token: %v", err)
	}
	return access
}

// restoreDatabase creates an empty database, dropped at the end of the
// test, and returns its URL.
func restoreDatabase(t *testing.T, f *registryFleet) string {
	t.Helper()
	name := fmt.Sprintf("usersync_restore_%d", time.Now().UnixNano())
	if _, err := f.pool.Exec(context.Background(), `CREATE DATABASE `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = f.pool.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`) })
	u, err := url.Parse(f.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func runTool(t *testing.T, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput() //nolint:gosec // G204: the test's own tools
	if err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(bin), err, out)
	}
}
