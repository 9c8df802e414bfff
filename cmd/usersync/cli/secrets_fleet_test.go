package cli

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/secret"
)

// rotatedKey is the key TestAccountSecretsKey rotates to.
const rotatedKey = "7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a"

// withEnv is env with the given variables set ("" removes one).
func withEnv(env map[string]string, kv ...string) map[string]string {
	out := maps.Clone(env)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

func keyID(t *testing.T, hexKey string) string {
	t.Helper()
	k, err := secret.ParseKey(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	return k.ID()
}

// wantOneLine fails unless a command's error output is one line holding want.
func wantOneLine(t *testing.T, what string, code int, errs, want string) {
	t.Helper()
	if code == ExitOK || !strings.Contains(errs, want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
		t.Errorf("%s: exit %d, want one line saying %q:\n%s", what, code, want, errs)
	}
}

// TestAddTakesNoSecretFromEnvironment: accounts add without a token flag
// is refused, though the default account's token is in the environment,
// and accounts set takes none either: the new account's API never
// receives the default account's token.
func TestAddTakesNoSecretFromEnvironment(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	const defaultToken = "DEFAULT-token-0123456789"
	f.env["USERSYNC_API_TOKEN"] = defaultToken
	sim := apisim.New(apisim.Options{Seed: 21, Users: 20, Token: "us-own-token-0123456789"})
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	usSchema := schematest.NewSchemaName(t, f.pool)
	before := f.state(t, usSchema)
	code, _, errs := run(t, f.env, "accounts", "add", "us", "--api-url", srv.URL, "--schema", usSchema)
	if code != ExitUsage || !strings.Contains(errs, "USERSYNC_API_TOKEN is not set") {
		t.Errorf("accounts add without a token: exit %d: %s", code, errs)
	}
	if after := f.state(t, usSchema); after != before {
		t.Errorf("a refused accounts add changed the registry:\n%s\n->\n%s", before, after)
	}
	f.mustRun(t, "accounts", "add", "us", "--api-url", srv.URL, "--schema", usSchema,
		"--api-token-file", f.secretFile(t, "us.token", "us-own-token-0123456789"))
	f.mustRun(t, "accounts", "set", "us", "--page-size", "7")
	if out := f.mustRun(t, "sync", "--account", "us", "--full"); !strings.Contains(out, "20 received") {
		t.Errorf("sync --account us:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the account's API received no request")
	}
	for _, h := range seen {
		if strings.Contains(h, defaultToken) || h != "Bearer us-own-token-0123456789" {
			t.Fatalf("the account's API received %q", h)
		}
	}
}

// TestAccountSecretsKey: an account's token is stored sealed; without
// USERSYNC_SECRETS_KEY it cannot be registered, and its runs stop with one
// line naming the setting, as with a wrong key; after accounts rekey only
// the new key opens it, and a sync still works.
func TestAccountSecretsKey(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	const token = "eu-TOKEN-0123456789"
	sim := apisim.New(apisim.Options{Seed: 23, Users: 30, Token: token})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	euSchema := schematest.NewSchemaName(t, f.pool)
	add := []string{"accounts", "add", "eu", "--api-url", srv.URL, "--schema", euSchema, "--api-token-file", f.secretFile(t, "eu.token", token)}
	noKey := withEnv(f.env, "USERSYNC_SECRETS_KEY", "")
	code, _, errs := run(t, noKey, add...)
	wantOneLine(t, "accounts add without the key", code, errs, "account eu: its secrets are encrypted; set USERSYNC_SECRETS_KEY_FILE")
	f.mustRun(t, add...)
	var stored string
	if err := f.pool.QueryRow(context.Background(), `SELECT settings->>'USERSYNC_API_TOKEN' FROM "`+f.env["USERSYNC_SCHEMA"]+`_river".accounts WHERE name = 'eu'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !secret.IsSealed(stored) || strings.Contains(stored, "TOKEN") {
		t.Errorf("stored token: %s", stored)
	}
	if out := f.mustRun(t, "sync", "--account", "eu", "--full"); !strings.Contains(out, "30 received") {
		t.Errorf("sync --account eu:\n%s", out)
	}
	code, _, errs = run(t, noKey, "sync", "--account", "eu")
	wantOneLine(t, "sync without the key", code, errs, "account eu: its secrets are encrypted; set USERSYNC_SECRETS_KEY_FILE")
	if out := f.mustRun(t, "accounts", "show", "eu"); strings.Contains(out, token) || strings.Contains(out, "usersync-sealed") {
		t.Errorf("accounts show shows the token:\n%s", out)
	}
	oldID, newID := keyID(t, testSecretsKey), keyID(t, rotatedKey)
	rotated := withEnv(f.env, "USERSYNC_SECRETS_KEY", rotatedKey)
	code, _, errs = run(t, rotated, "sync", "--account", "eu")
	wantOneLine(t, "sync with another key", code, errs, "account eu: its secrets are sealed with key id "+oldID+", USERSYNC_SECRETS_KEY is key id "+newID)
	code, _, errs = run(t, rotated, "accounts", "rekey")
	wantOneLine(t, "rekey without the old key", code, errs, "sealed with key id "+oldID)
	code, out, errs2 := run(t, rotated, "accounts", "rekey", "--old-key-file", f.secretFile(t, "old.key", testSecretsKey))
	if code != ExitOK || !strings.Contains(out, "account eu: 1 secret(s) sealed with key id "+newID) {
		t.Fatalf("accounts rekey: exit %d:\n%s%s", code, out, errs2)
	}
	code, _, errs = run(t, f.env, "sync", "--account", "eu")
	wantOneLine(t, "sync with the old key after rekey", code, errs, "sealed with key id "+newID+", USERSYNC_SECRETS_KEY is key id "+oldID)
	sim.UpdateUsers(3)
	if code, out, errs := run(t, rotated, "sync", "--account", "eu"); code != ExitOK || !strings.Contains(out, "3 updated") {
		t.Errorf("sync with the new key after rekey: exit %d:\n%s%s", code, out, errs)
	}
}
